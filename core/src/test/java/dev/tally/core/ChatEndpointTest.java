package dev.tally.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.score.Scorers;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

class ChatEndpointTest {
  @Test
  void aBaseUrlGetsTheChatPathOnceWhateverItsTrailingSlashesAndSchemeCase() {
    assertThat(ChatEndpoint.chatCompletions("https://api.example.com/v1")).isEqualTo(URI.create("https://api.example.com/v1/chat/completions"));
    assertThat(ChatEndpoint.chatCompletions("HTTPS://api.example.com/v1//")).isEqualTo(URI.create("https://api.example.com/v1/chat/completions"));
    assertThat(ChatEndpoint.chatCompletions("http://127.0.0.1:8080")).isEqualTo(URI.create("http://127.0.0.1:8080/chat/completions"));
  }

  @Test
  void credentialsAQueryAFragmentOrNoHostAreRefusedQuotingTheUrl() {
    for (String bad : List.of("https://user:secret@api.example.com/v1", "https://api.example.com/v1?api-version=2024",
        "https://api.example.com/v1#x", "ftp://api.example.com/v1", "api.example.com/v1", "http://h:99999/v1")) {
      assertThatThrownBy(() -> ChatEndpoint.chatCompletions(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("must be an http or https URL with a host (and a port up to 65535) and no query, fragment or credentials");
    }
    assertThatThrownBy(() -> ChatEndpoint.chatCompletions("https://")).hasMessageStartingWith("is not a URL: ");
  }

  /** The grader's spec follows the same rule: before, it took credentials (stored in the run's spec) and a query. */
  @Test
  void theModelGradedScorerRefusesWhatTheModelEvaluatorRefuses() {
    assertThatThrownBy(() -> Scorers.parse(List.of("model-graded:model=m,base-url=\"https://user:secret@api.example.com/v1\"")))
        .hasMessageContaining("base-url must be an http or https URL with a host");
    assertThatThrownBy(() -> Scorers.parse(List.of("model-graded:model=m,base-url=\"https://api.example.com/v1?x=1\"")))
        .hasMessageContaining("no query");
    assertThat(Scorers.parse(List.of("model-graded:model=m,base-url=HTTPS://api.example.com/v1"))).hasSize(1);
    assertThatThrownBy(() -> Scorers.parse(List.of("model-graded:model=m,base-url=https://h/v1,api-key-env=1KEY")))
        .hasMessageContaining("api-key-env must name an environment variable (letters, digits, _), got '1KEY'");
    assertThat(ChatEndpoint.apiKeyVariable("OPENAI_API_KEY")).isEqualTo("OPENAI_API_KEY");
  }
}

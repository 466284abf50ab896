package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's static files: served at {@code /} without the token (they hold no data), with the chart
 * library's WebJar at the version the page names, while the API and the metrics still need the token.
 */
class DashboardFilesTest {
  private static final Pattern UPLOT = Pattern.compile("\"uplot\": \"(/webjars/uplot/[^\"]+/dist/uPlot\\.esm\\.js)\"");

  @TempDir Path dir;

  private static HttpResponse<String> anonymous(TestApi t, String path) throws Exception {
    return t.send(HttpRequest.newBuilder(t.uri(path)).GET().build());
  }

  @Test
  void thePageItsModulesAndTheChartLibraryAreServedWithoutTheTokenButTheApiIsNot() throws Exception {
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder(), "dashboard-files-token")) {
      HttpResponse<String> page = anonymous(t, ApiServer.DASHBOARD_PATH);
      assertThat(page.statusCode()).isEqualTo(200);
      assertThat(page.headers().firstValue("Content-Type").orElse("")).startsWith("text/html").doesNotContain("null");
      assertThat(page.body()).contains("<script type=\"module\" src=\"/js/app.js\">").doesNotContain("${");
      Matcher uplot = UPLOT.matcher(page.body());
      assertThat(uplot.find()).as("the page's import map names the uPlot WebJar: %s", page.body()).isTrue();

      for (String path : new String[] {uplot.group(1), "/js/app.js", "/js/submission.js", "/js/pages/run.js", "/dashboard.css"}) {
        HttpResponse<String> file = anonymous(t, path);
        assertThat(file.statusCode()).as(path).isEqualTo(200);
        assertThat(file.headers().firstValue("Content-Type").orElse("")).as(path).doesNotContain("null");
      }
      assertThat(anonymous(t, "/js/app.js").headers().firstValue("Content-Type").orElse("")).contains("javascript");
      assertThat(anonymous(t, uplot.group(1)).body()).contains("export { uPlot as default }");

      assertThat(anonymous(t, ApiServer.BASE + "/runs").statusCode()).isEqualTo(401);
      assertThat(anonymous(t, ApiServer.METRICS_PATH).statusCode()).isEqualTo(401);
      assertThat(t.get(ApiServer.BASE + "/runs").statusCode()).isEqualTo(200);
      HttpResponse<String> missing = anonymous(t, "/js/nothing-here.js");
      assertThat(missing.statusCode()).isEqualTo(404);
      assertThat(missing.headers().firstValue("Content-Type").orElse("")).startsWith(ApiServer.PROBLEM_JSON);
    }
  }

  @Test
  void onlyTheApiAndTheMetricsNeedTheToken() {
    assertThat(ApiServer.needsToken("/api/v1/runs")).isTrue();
    assertThat(ApiServer.needsToken("/api/v1")).isTrue();
    assertThat(ApiServer.needsToken("/metrics")).isTrue();
    // As the router reads them: /metrics/ is served by /metrics's handler (it was served without the token).
    assertThat(ApiServer.needsToken("/metrics/")).isTrue();
    assertThat(ApiServer.needsToken("//metrics//")).isTrue();
    assertThat(ApiServer.needsToken("//api/v1//runs")).isTrue();
    assertThat(ApiServer.needsToken("/")).isFalse();
    assertThat(ApiServer.needsToken("/js/app.js")).isFalse();
    assertThat(ApiServer.needsToken("/api/v10")).isFalse();
  }
}

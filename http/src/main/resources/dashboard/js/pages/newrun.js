// New run: a dataset file (JSON Lines), the evaluator and settings, Submit. The submission's idempotency
// key is made when this form opens and lives in sessionStorage until the server confirms the run
// (submission.js), so a double click, a network error or a reload followed by Submit all give one run.
import { escapeHtml } from '../format.js';
import * as submission from '../submission.js';

const FIELDS = ['name', 'kind', 'cmd', 'millis', 'maxAttempts', 'timeoutRetries', 'caseTimeout'];

export function mount(main) {
  document.title = 'New run · Tally';
  main.innerHTML = `
    <h1>New run</h1>
    <div id="pending"></div>
    <form id="new-run" class="new-form" novalidate>
      <label class="wide">Dataset (JSON Lines: one case a line, each an object with a unique string "id")
        <input id="dataset" name="dataset" type="file" accept=".jsonl,.ndjson,.json,application/x-ndjson,application/jsonl" required></label>
      <label>Name <input name="name" placeholder="e.g. nightly"></label>
      <label>Evaluator <select name="kind">
        <option value="exec">exec: run a command per case</option>
        <option value="sleep">sleep: wait (a test evaluator)</option>
        <option value="noop">noop: pass at once (a test evaluator)</option></select></label>
      <label class="wide" data-for="exec">Command (placeholders such as {id} take the case's fields)
        <input name="cmd" class="mono" placeholder="python3 check.py {id}"></label>
      <label data-for="sleep">Milliseconds per case (else the case's "millis")<input name="millis" type="number" min="0"></label>
      <label>Max attempts <input name="maxAttempts" type="number" min="1" placeholder="server's default"></label>
      <label>Timeout retries <input name="timeoutRetries" type="number" min="0" placeholder="server's default"></label>
      <label>Case timeout <input name="caseTimeout" placeholder="e.g. 10m, 30s"></label>
      <div class="wide toolbar">
        <button class="primary" type="submit" id="submit">Submit</button>
        <span id="key-note" class="muted"></span>
      </div>
    </form>
    <div id="submit-status" role="status" aria-live="polite"></div>`;
  const $ = sel => main.querySelector(sel);
  const form = $('#new-run');
  const fileInput = $('#dataset');
  const status = $('#submit-status');
  let record = submission.open(); // the key exists from the moment the form does

  function fields() {
    const data = new FormData(form);
    const f = {};
    for (const name of FIELDS) {
      f[name] = String(data.get(name) ?? '').trim();
    }
    return f;
  }

  function fill(f) {
    for (const name of FIELDS) {
      if (f[name] != null && form.elements[name]) {
        form.elements[name].value = f[name];
      }
    }
  }

  function showEvaluatorFields() {
    const kind = form.elements.kind.value;
    for (const label of main.querySelectorAll('[data-for]')) {
      label.hidden = label.dataset.for !== kind;
    }
  }

  function showKey() {
    $('#key-note').innerHTML = `Idempotency key <span class="mono" id="key">${escapeHtml(record.key)}</span>`
      + (record.sends ? ` · sent ${record.sends} time${record.sends === 1 ? '' : 's'}, not yet confirmed` : '');
  }

  function showPending() {
    const f = record.file;
    if (record.confirmed) {
      // The server made the run after the user left this form (its answer came to a page no longer shown).
      const id = Number(record.confirmed.id);
      $('#pending').innerHTML = `<div class="notice info" role="status" id="confirmed-notice">
        <p><strong>Your last submission made run ${id}</strong>${f ? ` (<span class="mono">${escapeHtml(f.name)}</span>)` : ''};
        the answer came after you left this form. <a href="#/runs/${id}" id="open-confirmed">Open run ${id}</a>.
        Pressing Submit again with the same file answers with run ${id}: never a second one.</p>
        <p><button type="button" id="restart">Start a new submission</button>
        <span class="muted">(a new key, for another run)</span></p></div>`;
      $('#open-confirmed').addEventListener('click', () => submission.forget(record.key));
      $('#restart').addEventListener('click', restart);
      return;
    }
    if (record.refused) {
      $('#pending').innerHTML = `<div class="notice error" role="alert" id="refused-notice">
        <p><strong>The server refused the last send of this submission</strong>, and made nothing: ${escapeHtml(record.refused)}.
        Correct the form or the file and press Submit: the key is kept.</p></div>`;
      return;
    }
    if (!record.sends) {
      $('#pending').innerHTML = '';
      return;
    }
    $('#pending').innerHTML = `<div class="notice warn" role="alert" id="pending-notice">
      <p><strong>This submission was sent and the server has not confirmed it yet</strong> (the page was reloaded or the
      network failed). Its key is kept: ${f ? `choose the same file (<span class="mono">${escapeHtml(f.name)}</span>,
      ${f.size} bytes) and` : ''} press Submit, and the server answers with the run it made for this key, or makes it now:
      never a second one.</p>
      <p><button type="button" id="restart">Start a new submission instead</button>
      <span class="muted">(a new key: if the first one reached the server, this makes a second run)</span></p></div>`;
    $('#restart').addEventListener('click', restart);
  }

  /**
   * A refusal in words, and, when it names body lines, how they map to the file's: line 1 of the body is the
   * form's fields, so every line the server names is one more than the dataset's.
   */
  function refusal(err, fileName) {
    return err.problem && err.problem.line > 1
      ? `${err.message} (the request body's line 1 is this form's settings: its line N is line N-1 of ${fileName},`
        + ` so line ${err.problem.line} is line ${err.problem.line - 1} there)`
      : err.message;
  }

  function restart() {
    record = submission.restart();
    form.reset();
    showEvaluatorFields();
    showPending();
    showKey();
    status.innerHTML = '';
  }

  if (record.fields) {
    fill(record.fields);
  }
  showEvaluatorFields();
  showPending();
  showKey();

  form.addEventListener('input', () => {
    record = submission.remember(fields(), fileInput.files[0]);
  });
  form.addEventListener('change', () => {
    showEvaluatorFields();
    record = submission.remember(fields(), fileInput.files[0]);
  });

  form.addEventListener('submit', async e => {
    e.preventDefault();
    const file = fileInput.files[0];
    if (!file) {
      status.innerHTML = '<p class="notice error" role="alert">Choose the dataset file first.</p>';
      fileInput.focus();
      return;
    }
    const f = fields();
    if (f.kind === 'exec' && !f.cmd) {
      status.innerHTML = '<p class="notice error" role="alert">The exec evaluator needs a command.</p>';
      form.elements.cmd.focus();
      return;
    }
    record = submission.remember(f, file);
    const mine = record;
    const say = text => {
      status.innerHTML = `<p class="notice info">${escapeHtml(text)}</p>`;
      if (submission.current() && submission.current().key === mine.key) {
        record = submission.current();
        showKey();
      }
    };
    try {
      const { run, replayed } = await submission.send(mine, f, file, say);
      if (!form.isConnected) {
        return; // the user left this form: the submission stays, confirmed, and the next form says so
      }
      submission.forget(mine.key);
      status.innerHTML = `<p class="notice info">Run ${run.id} ${replayed ? 'was already made for this submission' : 'created'}.</p>`;
      if (location.hash === '#/new') {
        location.hash = `#/runs/${run.id}`;
      }
    } catch (err) {
      if (err instanceof submission.KeyReusedError) {
        status.innerHTML = `<div class="notice error" role="alert">
          <p><strong>The server refused this key for a different request.</strong> This submission's key was already sent
          with another body (another file or other settings: after a reload the file or a field changed), so the server
          will not make a run from this one under it: ${escapeHtml(err.message)}</p>
          <p>If you meant a new run with what the form holds now, start a new submission (a new key), then press Submit.</p>
          <p><button type="button" id="new-key">Start a new submission</button></p></div>`;
        $('#new-key').addEventListener('click', () => {
          record = submission.restart();
          record = submission.remember(fields(), fileInput.files[0]);
          status.innerHTML = '<p class="notice info">A new submission with a new key: press Submit to send it.</p>';
          showPending();
          showKey();
          $('#submit').focus();
        });
        $('#new-key').focus();
      } else {
        const why = refusal(err, file.name);
        submission.refused(mine.key, why); // said again after a reload, with the file's lines
        status.innerHTML = `<p class="notice error" role="alert">Not submitted: ${escapeHtml(why)}.
          The key is kept: correct the form and press Submit again.</p>`;
        if (submission.current() && submission.current().key === mine.key) {
          record = submission.current();
        }
      }
    }
  });
  return () => {};
}

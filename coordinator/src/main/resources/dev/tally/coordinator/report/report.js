// The case table of a Tally HTML report: the cases are a JSON array in #case-data; the table shows one
// page of them at a time (so a 100k-case report opens as fast as a 100-case one), filtered by verdict and
// by text in the id, input or output. Every text goes in through textContent, never as markup.
(function () {
  'use strict';
  const PAGE = Number(document.getElementById('case-table').dataset.pageSize);
  const cases = JSON.parse(document.getElementById('case-data').textContent);
  const body = document.querySelector('#case-table tbody');
  const verdict = document.getElementById('verdict-filter');
  const search = document.getElementById('search');
  const info = document.getElementById('page-info');
  const prev = document.getElementById('prev-page');
  const next = document.getElementById('next-page');
  let shown = cases;
  let page = 0;

  function text(value) {
    if (value === null || value === undefined) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  }

  function cell(row, value, cls) {
    const td = document.createElement('td');
    td.textContent = text(value);
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function detail(c) {
    const tr = document.createElement('tr');
    tr.className = 'detail';
    const td = document.createElement('td');
    td.colSpan = 8;
    const named = ['input', 'answer', 'output', 'stderr', 'failure'];
    const parts = named.map(key => [key, c[key]]);
    for (const key of Object.keys(c)) {
      if (!['id', 'verdict', 'score', 'attempts', 'worker', 'durationMillis', ...named].includes(key)) {
        parts.push([key, JSON.stringify(c[key], null, 2)]);
      }
    }
    for (const [name, value] of parts) {
      if (value === null || value === undefined || value === '' || value === 'null') continue;
      const h = document.createElement('h3');
      h.textContent = name;
      const pre = document.createElement('pre');
      pre.textContent = text(value);
      td.append(h, pre);
    }
    tr.appendChild(td);
    return tr;
  }

  function render() {
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    const rows = document.createDocumentFragment();
    for (const c of shown.slice(page * PAGE, (page + 1) * PAGE)) {
      const tr = document.createElement('tr');
      tr.className = 'case';
      cell(tr, c.id);
      cell(tr, c.verdict, 'verdict-' + c.verdict);
      cell(tr, c.score, 'num');
      cell(tr, c.attempts, 'num');
      cell(tr, c.worker);
      cell(tr, c.durationMillis, 'num');
      cell(tr, c.input, 'text');
      cell(tr, c.output || c.failure, 'text');
      tr.addEventListener('click', () => {
        const open = tr.nextSibling && tr.nextSibling.className === 'detail';
        if (open) tr.nextSibling.remove(); else tr.after(detail(c));
      });
      rows.appendChild(tr);
    }
    body.replaceChildren(rows);
    const first = shown.length === 0 ? 0 : page * PAGE + 1;
    info.textContent = first + '-' + Math.min(shown.length, (page + 1) * PAGE) + ' of ' + shown.length
        + (shown.length === cases.length ? ' cases' : ' matching cases (' + cases.length + ' in all)');
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }

  function filter() {
    const v = verdict.value;
    const q = search.value.trim().toLowerCase();
    shown = cases.filter(c => (v === '' || c.verdict === v)
        && (q === '' || text(c.id).toLowerCase().includes(q) || text(c.input).toLowerCase().includes(q)
            || text(c.output).toLowerCase().includes(q)));
    page = 0;
    render();
  }

  verdict.addEventListener('change', filter);
  search.addEventListener('input', filter);
  prev.addEventListener('click', () => { page--; render(); });
  next.addEventListener('click', () => { page++; render(); });
  render();
})();

// The sng console's only script: small conveniences; every page works without it.
document.addEventListener('DOMContentLoaded', () => {
  // The tenant switcher goes on selection.
  const sw = document.getElementById('tenant-switch');
  if (sw) sw.addEventListener('change', () => sw.form.submit());
  // A confirmation input (`data-expect`): its form's submit button waits for the exact name.
  for (const input of document.querySelectorAll('input[data-expect]')) {
    const button = input.form && input.form.querySelector('button[type=submit]');
    if (!button) continue;
    const check = () => { button.disabled = input.value.trim() !== input.dataset.expect; };
    input.addEventListener('input', check);
    check();
  }
});

// A run still going (`data-follow`): its log grows on the page, and its phase changes, until
// the run ends. A failed read is tried again a little later. The fallback of a browser
// without server-sent events (or a stream refused): the live stream below does it otherwise.
const sngPoll = () => {
  const log = document.querySelector('pre[data-follow]');
  if (!log) return;
  const phase = document.getElementById('run-phase');
  let offset = Number(log.dataset.offset || 0);
  const ended = (p) => p && p !== 'Queued' && p !== 'Running';
  const tick = async () => {
    let delay = 1000;
    try {
      const r = await fetch(`${log.dataset.follow}?offset=${offset}`, { credentials: 'same-origin' });
      if (r.ok) {
        const text = await r.text();
        if (text) log.textContent += text;
        offset = Number(r.headers.get('X-Sng-Log-Size') || offset);
        const p = r.headers.get('X-Sng-Run-Phase');
        if (phase && p) phase.textContent = p;
        if (ended(p)) {
          log.removeAttribute('data-follow');
          log.dataset.ended = p;
          return;
        }
      } else {
        delay = 5000;
      }
    } catch {
      delay = 5000;
    }
    setTimeout(tick, delay);
  };
  setTimeout(tick, 500);
};
document.addEventListener('DOMContentLoaded', () => {
  if (!document.getElementById('live') || !window.EventSource) sngPoll();
});

// Live pages (`#live`: the list of workspaces, a workspace, a run): server-sent events of the
// tenant's changes update the page in place, without a reload and without moving the focus;
// `#live-status` (aria-live polite) says what changed. A lost connection resumes by itself:
// the browser sends the last event's id (`Last-Event-ID`) and gets only what came after. A
// `reload` event (the server cannot resume) reloads the page's data.
document.addEventListener('DOMContentLoaded', () => {
  const live = document.getElementById('live');
  if (!live || !window.EventSource) return;
  const say = document.getElementById('live-status');
  const announce = (text) => { if (say) say.textContent = text; };
  const setBadge = (badge, status) => {
    if (!badge || badge.textContent === status) return false;
    badge.className = `badge st-${status}`;
    badge.textContent = status;
    return true;
  };
  const source = new EventSource(live.dataset.stream);
  document.body.dataset.live = 'connecting';
  source.addEventListener('open', () => { document.body.dataset.live = 'open'; });
  source.addEventListener('error', () => {
    document.body.dataset.live = source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting';
    // Refused for good (e.g. too many streams): a run's log is still followed, by polling.
    if (source.readyState === EventSource.CLOSED) sngPoll();
  });
  source.addEventListener('reload', () => { source.close(); window.location.reload(); });
  source.addEventListener('workspace', (e) => {
    const w = JSON.parse(e.data);
    live.dataset.lastEvent = e.lastEventId;
    // The list: the row of this workspace, or a new row where the page would list it.
    let listed = false;
    for (const row of document.querySelectorAll('#workspaces tbody tr')) {
      if (row.cells[0].textContent.trim() !== w.name) continue;
      listed = true;
      if (setBadge(row.cells[1].querySelector('.badge'), w.status)) announce(`${w.name}: ${w.status}`);
    }
    const list = document.querySelector('#workspaces tbody');
    if (list && !listed && sngListed(w, list)) {
      list.insertBefore(sngRow(w), [...list.rows].find((r) => r.cells[0].textContent.trim() > w.name) || null);
      announce(`new workspace ${w.name}: ${w.status}`);
    }
    // A workspace's page: the dependency graph's node of this workspace (its colour, its
    // status in words, its title) and its row in the graph's table.
    const href = `/workspaces/${encodeURIComponent(w.name)}`;
    for (const node of document.querySelectorAll('#graph a.g-node')) {
      if (!node.getAttribute('href').endsWith(href)) continue;
      const status = node.querySelector('.g-status');
      if (!status || status.textContent === w.status) continue;
      node.setAttribute('class', node.getAttribute('class').replace(/\bst-\S+/, `st-${w.status}`));
      status.textContent = w.status;
      const title = node.querySelector('title');
      if (title) title.textContent = `${w.name}: ${w.status}`;
      if (live.dataset.workspace !== w.name) announce(`${w.name}: ${w.status}`);
    }
    for (const row of document.querySelectorAll('#graph-list tbody tr')) {
      const link = row.cells[0].querySelector('a');
      if (link && link.getAttribute('href').endsWith(href)) setBadge(row.cells[2].querySelector('.badge'), w.status);
    }
    // A workspace's page: its badge and conditions.
    if (live.dataset.workspace !== w.name) return;
    const changed = setBadge(document.querySelector('h1 .badge[class*="st-"]'), w.status);
    const body = document.querySelector('#conditions tbody');
    if (body) {
      const rows = w.conditions.map((c) => {
        const tr = document.createElement('tr');
        for (const v of [c.type, c.status, c.reason, c.message]) {
          const td = document.createElement('td');
          td.textContent = v;
          tr.appendChild(td);
        }
        return tr;
      });
      body.replaceChildren(...rows);
    }
    // A button whose moment has passed goes (the server would refuse it anyway).
    const cancel = document.getElementById('cancel');
    if (cancel) cancel.form.hidden = !w.activeJob;
    const approve = document.getElementById('approve-form');
    if (approve) approve.hidden = w.status !== 'AwaitingApproval';
    if (changed) announce(`${w.name}: ${w.status}`);
  });
  // The runs of a workspace's page: phases in place, new runs on top.
  source.addEventListener('runs', (e) => {
    const w = JSON.parse(e.data);
    live.dataset.lastEvent = e.lastEventId;
    const runs = document.querySelector('#runs tbody');
    if (runs && live.dataset.workspace === w.workspace) {
      for (const r of [...w.runs].reverse()) {
        const row = [...runs.rows].find((tr) => tr.cells[0].textContent.trim() === r.id);
        if (row) {
          if (row.cells[3].textContent !== r.phase) row.cells[3].textContent = r.phase;
          continue;
        }
        const tr = document.createElement('tr');
        const link = document.createElement('a');
        link.href = `${live.dataset.stream.split('/stream')[0]}/runs/${encodeURIComponent(r.id)}`;
        link.textContent = r.id;
        const first = document.createElement('td');
        first.appendChild(link);
        tr.appendChild(first);
        for (const v of [r.operation, r.trigger, r.phase, r.createdAt]) {
          const td = document.createElement('td');
          td.textContent = v;
          tr.appendChild(td);
        }
        runs.prepend(tr);
      }
    }
  });
  source.addEventListener('run', (e) => {
    const r = JSON.parse(e.data);
    live.dataset.lastEvent = e.lastEventId;
    const log = document.querySelector('pre[data-follow]');
    const phase = document.getElementById('run-phase');
    if (log && r.log) log.textContent += r.log;
    if (phase && r.phase && phase.textContent !== r.phase) {
      phase.textContent = r.phase;
      announce(`The run is ${r.phase}`);
    }
    if (r.ended) {
      source.close();
      document.body.dataset.live = 'ended';
      if (log) {
        log.removeAttribute('data-follow');
        log.dataset.ended = r.phase;
      }
    }
  });
});

// Whether workspace event `w` belongs on the list page in view: it passes the page's filters
// (status, label `k=v` or `k`, name search) and falls within the page (the list is by name; a
// full page ends at its last row, a page after a name starts there).
function sngListed(w, list) {
  const q = new URLSearchParams(window.location.search);
  if (q.get('status') && q.get('status') !== w.status) return false;
  const label = q.get('label');
  if (label) {
    // A selector beyond `k=v` or `k`: left to the next load of the page.
    if (/[,!()\s]/.test(label.trim())) return false;
    const [k, v] = label.trim().split('=');
    const labels = w.labels || {};
    if (!(k in labels) || (v !== undefined && labels[k] !== v)) return false;
  }
  const search = (q.get('q') || '').trim();
  if (search && !w.name.includes(search)) return false;
  if (q.get('after') && w.name <= q.get('after')) return false;
  const last = list.rows.length ? list.rows[list.rows.length - 1].cells[0].textContent.trim() : null;
  return !document.getElementById('next-page') || (last !== null && w.name < last);
}

// A row of the list for workspace event `w`, as the server renders one (text only).
function sngRow(w) {
  const tr = document.createElement('tr');
  const cell = () => tr.appendChild(document.createElement('td'));
  const a = cell().appendChild(document.createElement('a'));
  a.href = `${window.location.pathname.replace(/\/$/, '')}/${encodeURIComponent(w.name)}`;
  a.textContent = w.name;
  const badge = cell().appendChild(document.createElement('span'));
  badge.className = `badge st-${w.status}`;
  badge.textContent = w.status;
  const labels = cell();
  for (const [k, v] of Object.entries(w.labels || {})) {
    const span = labels.appendChild(document.createElement('span'));
    span.className = 'label';
    span.textContent = `${k}=${v}`;
    labels.appendChild(document.createTextNode(' '));
  }
  cell().appendChild(document.createElement('code')).textContent = w.module;
  return tr;
}

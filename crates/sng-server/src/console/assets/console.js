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
// the run ends. A failed read is tried again a little later.
document.addEventListener('DOMContentLoaded', () => {
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
});

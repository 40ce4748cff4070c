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

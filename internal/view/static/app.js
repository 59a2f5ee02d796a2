// swerve view: the little the pages need from a script. The table's
// filters live in the URL; changing one submits the form (a new URL).
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("filters");
  if (form) {
    for (const sel of form.querySelectorAll("select")) {
      sel.addEventListener("change", () => form.requestSubmit());
    }
    // Empty fields stay out of the URL.
    form.addEventListener("submit", () => {
      for (const el of form.elements) {
        if (el.name && el.value === "") el.disabled = true;
      }
    });
  }
  const all = (open) => () => {
    for (const d of document.querySelectorAll("#steps details")) d.open = open;
  };
  const ex = document.getElementById("expand"), co = document.getElementById("collapse");
  if (ex) ex.addEventListener("click", all(true));
  if (co) co.addEventListener("click", all(false));
});

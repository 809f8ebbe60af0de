// On narrow screens the chat and the board share the screen through two tabs.

export function initTabs(layout, initial) {
  const tabs = [...layout.querySelectorAll("[role=tab]")];
  const show = (name, { focus = false } = {}) => {
    layout.dataset.tab = name;
    for (const tab of tabs) {
      const selected = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      if (selected) {
        tab.classList.remove("has-news");
        if (focus) tab.focus();
      }
    }
  };
  for (const tab of tabs) {
    tab.addEventListener("click", () => show(tab.dataset.tab));
    tab.addEventListener("keydown", (event) => {
      // Arrow keys move between tabs, as in the ARIA tabs pattern.
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      const next = tabs[(tabs.indexOf(tab) + 1) % tabs.length];
      show(next.dataset.tab, { focus: true });
    });
  }
  show(initial);
  return {
    show,
    /** Mark a hidden tab as having news (a dot), e.g. the board changed while chatting. */
    notify(name) {
      if (layout.dataset.tab === name) return;
      const tab = tabs.find((candidate) => candidate.dataset.tab === name);
      if (tab) tab.classList.add("has-news");
    },
  };
}

/**
 * The status page's CSS, inline (no external assets). Tables become stacked cards below 640 px,
 * each cell labelled from its `data-label`, so the page reads on a phone.
 */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #5b6470; --bg: #f6f7f9; --card: #fff; --line: #d9dde3;
  --up: #0f7b3f; --up-bg: #e3f5ea; --down: #b42318; --down-bg: #fdeceb; --warn-bg: #fff4d6; --accent: #2456c7; }
@media (prefers-color-scheme: dark) { :root { --fg: #e7e9ec; --muted: #9aa3ad; --bg: #14171b; --card: #1d2126; --line: #333a42;
  --up: #5fd08f; --up-bg: #17301f; --down: #ff8a80; --down-bg: #3a1d1b; --warn-bg: #3a3115; --accent: #8fb0ff; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header, main, footer, #problems { max-width: 1100px; margin: 0 auto; padding: 0 16px; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px; padding-top: 16px; }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 1.15rem; margin: 24px 0 8px; }
h3 { font-size: 1rem; margin: 16px 0 6px; }
.meta { flex-basis: 100%; margin: 2px 0 0; color: var(--muted); font-size: .85rem; overflow-wrap: anywhere; }
.group .error { color: var(--down); }
.live { font-size: .8rem; padding: 1px 8px; border-radius: 10px; background: var(--up-bg); color: var(--up); }
.live.off { background: var(--warn-bg); color: var(--muted); }
#problems p { background: var(--warn-bg); border-left: 4px solid var(--down); padding: 8px 12px; margin: 12px 0 0; overflow-wrap: anywhere; }
#filters { display: flex; flex-wrap: wrap; gap: 8px 16px; margin: 4px 0 8px; }
#filters select { font: inherit; padding: 2px 4px; max-width: 14rem; }
.summary, .count, .empty { color: var(--muted); font-weight: normal; font-size: .9rem; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
td.c-id, td.c-age { font-variant-numeric: tabular-nums; }
td.c-state.up { color: var(--up); font-weight: 600; }
td.c-state.down { color: var(--down); font-weight: 600; }
tr[data-state="down"] { background: var(--down-bg); }
td.c-status.disabled { color: var(--muted); }
tr.flash td { animation: flash 1.2s ease-out; }
@keyframes flash { from { background: var(--warn-bg); } to { background: transparent; } }
.group { background: var(--card); border: 1px solid var(--line); padding: 4px 12px 8px; margin-bottom: 10px; }
.group h3 { margin-top: 6px; }
.leader { margin: 0 0 4px; font-size: .9rem; }
.members { margin: 0; padding-left: 18px; }
.members li { margin: 2px 0; overflow-wrap: anywhere; }
.caps { color: var(--muted); font-size: .85rem; font-family: ui-monospace, monospace; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
footer { color: var(--muted); font-size: .85rem; padding-top: 24px; padding-bottom: 24px; }
a { color: var(--accent); }
[hidden] { display: none !important; }
@media (max-width: 640px) {
  table, thead, tbody, tr, td { display: block; width: 100%; }
  thead { position: absolute; left: -9999px; }
  table { border: 0; background: none; }
  tr { background: var(--card); border: 1px solid var(--line); margin-bottom: 8px; padding: 4px 0; }
  td { display: flex; gap: 12px; border: 0; padding: 3px 12px; }
  td::before { content: attr(data-label); flex: 0 0 7.5rem; color: var(--muted); font-size: .8rem; text-transform: uppercase; }
}
`

/// The console's one stylesheet, served at `/assets/console.css` (the Content-Security-Policy allows
/// styles from this server only). Colours keep a contrast of at least 4.5:1 (WCAG AA, which the browser
/// test's axe-core checks).
enum ConsoleStyleSheet {
    static let css = """
        :root { --ink: #1b1f24; --muted: #4a5360; --line: #c9d1d9; --accent: #0b5cad; --bad: #a4161a; --good: #1a6b2f; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.5 system-ui, "Noto Sans KR", "NanumGothic", sans-serif; color: var(--ink); background: #fff; }
        header { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; padding: .5rem 1.25rem; border-bottom: 1px solid var(--line); background: #f4f6f8; }
        header .brand { font-weight: 700; color: var(--ink); text-decoration: none; }
        header nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
        header .account { margin-left: auto; display: flex; gap: .75rem; align-items: center; }
        a { color: var(--accent); }
        a[aria-current="page"] { font-weight: 700; text-decoration: underline; }
        main { padding: 1rem 1.25rem 3rem; max-width: 78rem; }
        h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
        h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
        table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
        th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: #f4f6f8; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        form.inline { display: inline; }
        form.stack { display: grid; gap: .4rem; max-width: 26rem; }
        form.row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin: .5rem 0; }
        form.row label { display: grid; gap: .2rem; }
        form.row .field { display: grid; gap: .2rem; }
        pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f6f8; padding: .5rem; border: 1px solid var(--line); }
        input, select, textarea, button { font: inherit; padding: .35rem .5rem; border: 1px solid #6b7480; border-radius: 4px; color: var(--ink); background: #fff; }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.danger { background: var(--bad); border-color: var(--bad); }
        .error { color: var(--bad); font-weight: 600; }
        .ok { color: var(--good); font-weight: 600; }
        .muted, .who { color: var(--muted); }
        .tag { display: inline-block; white-space: nowrap; padding: 0 .4rem; border-radius: 3px; border: 1px solid var(--line); font-size: .85em; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; }
        """
}

/// The HTML report's style sheet, inline in the page: system fonts only, light and dark by
/// `prefers-color-scheme`, one column that fits a phone, tables that scroll sideways on a phone and
/// fit a 1280-pixel window (wider than a phone, headers and names wrap; numbers never do).
enum ReportStyleSheet {
    static let css = """
        :root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --rule: #d1d9e0;
          --stripe: #f6f8fa; --s0: #1a7f37; --s1: #cf222e; --s2: #8250df; --accent: #0969da; }
        @media (prefers-color-scheme: dark) {
          :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --rule: #3d444d; --stripe: #151b23;
            --s0: #3fb950; --s1: #f85149; --s2: #a371f7; --accent: #4493f8; }
        }
        * { box-sizing: border-box; }
        html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
        body { margin: 0; background: var(--bg); color: var(--fg); line-height: 1.5;
          font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Apple SD Gothic Neo", "Noto Sans CJK KR",
            "Noto Sans KR", "NanumGothic", "Malgun Gothic", sans-serif; }
        main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.5rem; line-height: 1.25; margin: 0.5rem 0 1rem; }
        h2 { font-size: 1.2rem; border-bottom: 1px solid var(--rule); padding-bottom: 0.25rem; margin-top: 2rem; }
        h3 { font-size: 1rem; margin-top: 1.25rem; }
        ul { padding-left: 1.25rem; }
        code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
        .scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.5rem 0 1rem; }
        table { border-collapse: collapse; font-size: 0.875rem; }
        th, td { border: 1px solid var(--rule); padding: 0.25rem 0.5rem; text-align: left; white-space: nowrap; }
        @media (min-width: 601px) {
          th, td:not(.num) { white-space: normal; overflow-wrap: anywhere; }
          details.figures table { font-size: 0.7rem; }
          details.figures th, details.figures td { padding: 0.15rem 0.25rem; }
        }
        th { background: var(--stripe); }
        tbody tr:nth-child(even) { background: var(--stripe); }
        .num { text-align: right; font-variant-numeric: tabular-nums; }
        .glance { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 26rem), 1fr)); gap: 0 2rem; }
        .glance h2 { grid-column: 1 / -1; }
        figure.chart { margin: 1rem 0; }
        figcaption { font-weight: 600; margin-bottom: 0.25rem; }
        svg { display: block; width: 100%; height: auto; max-width: 600px; }
        svg .grid { stroke: var(--rule); stroke-width: 1; }
        svg .axis, svg .value { fill: var(--muted); font-size: 11px; font-family: inherit; }
        svg .s0, .swatch.s0 { fill: var(--s0); background: var(--s0); }
        svg .s1, .swatch.s1 { fill: var(--s1); background: var(--s1); }
        svg .s2, .swatch.s2 { fill: var(--s2); background: var(--s2); }
        .legend { list-style: none; padding: 0; margin: 0.25rem 0; display: flex; flex-wrap: wrap; gap: 1rem;
          font-size: 0.875rem; color: var(--muted); }
        .swatch { display: inline-block; width: 0.75rem; height: 0.75rem; margin-right: 0.35rem; border-radius: 2px; }
        details.figures summary { cursor: pointer; color: var(--accent); margin: 1.5rem 0 0.5rem; }
        a { color: var(--accent); }
        footer { margin-top: 2rem; color: var(--muted); font-size: 0.875rem; border-top: 1px solid var(--rule); }
        @media (max-width: 600px) { main { padding: 0.75rem; } body { font-size: 14px; } }
        """
}

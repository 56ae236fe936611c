/**
 * Plots without a browser: a grouped horizontal bar chart written as SVG by hand and turned into
 * PNG by rsvg-convert (Debian's librsvg2-bin, installed by scripts/backends.sh).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

export interface Series {
  name: string
  color: string
}

export const SERIES = {
  rollcall: { name: 'rollcall', color: '#2b6cb0' },
  tooz: { name: 'Python tooz 3.1', color: '#dd6b20' },
  raw: { name: 'raw client (floor)', color: '#718096' },
} satisfies Record<string, Series>

export interface BarGroup {
  label: string
  /** One value per series, in series order; undefined = not applicable / not measured. */
  values: (number | undefined)[]
  /** Optional text per value, replacing the formatted number (e.g. "n/a", "~975 s (extrapolated)"). */
  notes?: (string | undefined)[]
}

export interface Chart {
  title: string
  unit: string
  series: Series[]
  groups: BarGroup[]
  log?: boolean
  /** A note under the title (what is better, conditions). */
  subtitle?: string
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return '–'
  if (v >= 1_000_000) return `${+(v / 1_000_000).toPrecision(3)}M`
  if (v >= 100_000) return `${Math.round(v / 1000)}k`
  if (v >= 10_000) return `${(v / 1000).toFixed(1)}k`
  if (v >= 100) return String(Math.round(v))
  if (v >= 10) return v.toFixed(1)
  if (v >= 1) return v.toFixed(2)
  return v.toPrecision(2)
}

/** The chart as SVG text. */
export function svgChart(c: Chart): string {
  const barH = 14
  const gap = 3
  const groupGap = 14
  const left = 150
  const right = 120
  const plotW = 520
  const top = c.subtitle ? 64 : 48
  const legendH = 26
  const groupH = c.series.length * (barH + gap) + groupGap
  const height = top + c.groups.length * groupH + legendH + 30
  const width = left + plotW + right
  const all = c.groups.flatMap((g) => g.values).filter((v): v is number => v !== undefined && Number.isFinite(v) && v > 0)
  const max = Math.max(...all, 1e-9)
  const min = Math.min(...all, max)
  const lo = c.log ? 10 ** Math.floor(Math.log10(min)) : 0
  const hi = c.log ? 10 ** Math.ceil(Math.log10(max)) : max * 1.05
  const x = (v: number): number => (c.log ? ((Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo) || 1)) * plotW : (v / hi) * plotW)
  const parts: string[] = []
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans, sans-serif" font-size="11">`)
  parts.push(`<rect width="100%" height="100%" fill="white"/>`)
  parts.push(`<text x="${left}" y="22" font-size="15" font-weight="bold">${esc(c.title)}</text>`)
  if (c.subtitle) parts.push(`<text x="${left}" y="40" fill="#4a5568">${esc(c.subtitle)}</text>`)
  // Grid.
  const ticks: number[] = []
  if (c.log) { for (let t = lo; t <= hi * 1.0001; t *= 10) ticks.push(t) }
  else for (let i = 0; i <= 5; i++) ticks.push((hi / 5) * i)
  const plotBottom = top + c.groups.length * groupH - groupGap + 6
  for (const t of ticks) {
    const tx = left + x(t || (c.log ? lo : 0))
    parts.push(`<line x1="${tx}" y1="${top - 6}" x2="${tx}" y2="${plotBottom}" stroke="#e2e8f0"/>`)
    parts.push(`<text x="${tx}" y="${plotBottom + 14}" text-anchor="middle" fill="#4a5568">${esc(formatValue(t))}</text>`)
  }
  parts.push(`<text x="${left + plotW / 2}" y="${plotBottom + 28}" text-anchor="middle" fill="#2d3748">${esc(c.unit)}${c.log ? ' (log scale)' : ''}</text>`)
  c.groups.forEach((g, gi) => {
    const gy = top + gi * groupH
    parts.push(`<text x="${left - 8}" y="${gy + (c.series.length * (barH + gap)) / 2 + 4}" text-anchor="end" font-weight="bold">${esc(g.label)}</text>`)
    c.series.forEach((s, si) => {
      const y = gy + si * (barH + gap)
      const v = g.values[si]
      const note = g.notes?.[si]
      if (v !== undefined && Number.isFinite(v) && v > 0) {
        const w = Math.max(1, x(Math.max(v, c.log ? lo : 0)))
        parts.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${s.color}"/>`)
        parts.push(`<text x="${left + w + 4}" y="${y + barH - 3}" fill="#1a202c">${esc(note ?? formatValue(v))}</text>`)
      } else {
        parts.push(`<text x="${left + 4}" y="${y + barH - 3}" fill="#a0aec0">${esc(note ?? 'n/a')}</text>`)
      }
    })
  })
  // Legend.
  let lx = left
  const ly = plotBottom + 40
  for (const s of c.series) {
    parts.push(`<rect x="${lx}" y="${ly}" width="12" height="12" fill="${s.color}"/>`)
    parts.push(`<text x="${lx + 16}" y="${ly + 10}">${esc(s.name)}</text>`)
    lx += 24 + s.name.length * 6.5
  }
  parts.push('</svg>')
  return parts.join('\n')
}

/** Writes the chart as PNG at `pngPath` (through a temporary SVG beside it). */
export function writePng(c: Chart, pngPath: string): void {
  mkdirSync(dirname(pngPath), { recursive: true })
  const svg = pngPath.replace(/\.png$/, '.svg')
  writeFileSync(svg, svgChart(c))
  try {
    execFileSync('rsvg-convert', ['-o', pngPath, svg], { stdio: ['ignore', 'ignore', 'pipe'] })
  } finally {
    rmSync(svg, { force: true })
  }
}

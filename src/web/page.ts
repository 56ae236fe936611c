/**
 * The status page (`GET /`): server-rendered, every value HTML-escaped here; the inline script
 * (page-script.ts) then keeps it live from `v1/events`, writing values with textContent only.
 * Every link is relative (`v1/events`, `healthz`, `./`), so the page works wherever it is mounted
 * (`/`, or `/status/` under createStatusHandler's basePath). No framework, no build step, nothing fetched from elsewhere: the CSS and the script are inline,
 * allowed by a Content-Security-Policy nonce.
 */
import { PAGE_SCRIPT } from './page-script.js'
import { PAGE_STYLE } from './page-style.js'
import { PAGE_GROUPS, type GroupQuery, type GroupRow } from './groups.js'
import { matchesFilter, type ServiceFilter, type ServiceRow } from './services.js'

/** What the page says about the server (every URL already redacted). */
export interface PageInfo {
  title: string
  /** Service-group driver and catalog, when services are shown. */
  services?: { driver: string; catalog: string }
  /** Coordination backend, when groups are shown. */
  coordination?: { url: string; driver: string; hasLeader: boolean }
  readOnly: boolean
  /** Whether `metrics` (Prometheus) is served beside the page. */
  metrics: boolean
}

/** Everything one render needs. */
export interface PageData {
  info: PageInfo
  services: ServiceRow[]
  /** One page of the groups that pass `groupQuery`. */
  groups: GroupRow[]
  /** Which groups are shown (prefix, empty ones or not, the page); default: those with members. */
  groupQuery?: GroupQuery
  /** The cursor of the next page of groups; null or undefined when this is the last. */
  nextGroups?: string | null
  filter: ServiceFilter
  /** Backend errors to show (already redacted). */
  problems: string[]
  nonce: string
  now: Date
}

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** `2024-05-01 12:00:03` (UTC), or an em dash. */
export function formatTime(iso: string | null): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)}` : '—'
}

/** `4 s`, `3 min`, `2 h`, `5 d`, or an em dash. */
export function formatAge(iso: string | null, now: Date): string {
  if (!iso) return '—'
  const s = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000))
  if (s < 120) return `${s} s`
  if (s < 7200) return `${Math.floor(s / 60)} min`
  if (s < 172800) return `${Math.floor(s / 3600)} h`
  return `${Math.floor(s / 86400)} d`
}

/** The columns of a service row: [label, class]. The script builds rows with the same list. */
export const COLUMNS = [['ID', 'id'], ['Binary', 'binary'], ['Host', 'host'], ['Zone', 'zone'], ['Status', 'status'], ['State', 'state'], [
  'Updated At',
  'updated',
], ['Last report', 'age']] as const

/** The Content-Security-Policy of the page: only its own nonce'd style and script, and its own origin. */
export function pageCsp(nonce: string): string {
  return `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; img-src data:; base-uri 'none'; form-action `
    + `'self'; frame-ancestors 'none'`
}

/** The whole page. */
export function renderPage(d: PageData): string {
  const topics = [...new Set(d.services.map((s) => s.topic))].sort()
  const zones = [...new Set(d.services.map((s) => s.zone ?? ''))].sort()
  const up = d.services.filter((s) => s.state === 'up').length
  const meta = [
    d.info.services ? `driver <b>${escapeHtml(d.info.services.driver)}</b> · catalog <code>${escapeHtml(d.info.services.catalog)}</code>` : '',
    d.info.coordination ? `coordination <code>${escapeHtml(d.info.coordination.url)}</code>` : '',
    d.info.readOnly ? 'read-only' : 'writes need a token',
  ].filter(Boolean).join(' · ')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(d.info.title)}</title>
<link rel="icon" href="data:,">
<style nonce="${escapeHtml(d.nonce)}">${PAGE_STYLE}</style>
</head>
<body>
<header>
  <h1>${escapeHtml(d.info.title)}</h1>
  <span id="live" class="live off" title="Live updates">connecting…</span>
  <p class="meta">${meta}</p>
</header>
<div id="problems" role="alert"${d.problems.length ? '' : ' hidden'}>${d.problems.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}</div>
<main>
${d.info.services ? renderServices(d, topics, zones, up) : ''}
${d.info.coordination ? renderGroups(d) : ''}
</main>
<footer>JSON: <a href="v1/services">v1/services</a> · <a href="v1/groups">v1/groups</a> · \
${d.info.metrics ? '<a href="metrics">metrics</a> · ' : ''}<a href="healthz">healthz</a></footer>
<script nonce="${escapeHtml(d.nonce)}">${PAGE_SCRIPT}</script>
</body>
</html>
`
}

function select(name: string, label: string, values: string[], selected: string | undefined, all: string): string {
  const options = [
    `<option value="">${escapeHtml(all)}</option>`,
    ...values.map((v) => `<option value="${escapeHtml(v)}"${v === selected ? ' selected' : ''}>${escapeHtml(v || '(none)')}</option>`),
  ]
  if (selected !== undefined && selected !== '' && !values.includes(selected)) {
    options.push(`<option value="${escapeHtml(selected)}" selected>${escapeHtml(selected)}</option>`)
  }
  return `<label>${escapeHtml(label)} <select name="${name}" id="f-${name}">${options.join('')}</select></label>`
}

function renderServices(d: PageData, topics: string[], zones: string[], up: number): string {
  const byTopic = topics.map((topic) => {
    const rows = d.services.filter((s) => s.topic === topic)
    const visible = rows.filter((r) => matchesFilter(r, d.filter))
    const upHere = rows.filter((r) => r.state === 'up').length
    return `<section class="topic" data-topic="${escapeHtml(topic)}"${visible.length ? '' : ' hidden'}>
<h3>${escapeHtml(topic)} <span class="count">${upHere} up · ${rows.length - upHere} down</span></h3>
<table><thead><tr>${COLUMNS.map(([label]) => `<th scope="col">${label}</th>`).join('')}</tr></thead>
<tbody>${rows.map((r) => renderRow(r, d.now, !matchesFilter(r, d.filter))).join('')}</tbody></table>
</section>`
  }).join('\n')
  return `<section id="services" aria-labelledby="services-title">
<h2 id="services-title">Services</h2>
<form id="filters" method="get" action="./">
${select('topic', 'Topic', topics, d.filter.topic, 'all topics')}
${select('zone', 'Zone', zones, d.filter.zone, 'all zones')}
${select('state', 'State', ['up', 'down'], d.filter.state, 'up and down')}
<noscript><button type="submit">Filter</button></noscript>
</form>
<p id="summary" class="summary">${d.services.length} services: ${up} up, ${d.services.length - up} down</p>
<div id="topics">${byTopic}</div>
<p id="no-services" class="empty"${d.services.length ? ' hidden' : ''}>No services yet: start one with <code>rollcall service run</code>.</p>
</section>`
}

function renderRow(r: ServiceRow, now: Date, hidden: boolean): string {
  const cells: Record<string, string> = {
    id: String(r.id),
    binary: r.binary,
    host: r.host,
    zone: r.zone ?? '—',
    status: r.status + (r.disabled_reason ? ` (${r.disabled_reason})` : ''),
    state: r.state + (r.forced_down ? ' (forced)' : ''),
    updated: formatTime(r.updated_at),
    age: formatAge(r.last_report_at, now),
  }
  const tds = COLUMNS.map(([label, key]) => {
    const extra = key === 'state' ? ` ${r.state}` : key === 'status' ? ` ${r.status}` : ''
    const ts = key === 'age' && r.last_report_at ? ` data-ts="${escapeHtml(r.last_report_at)}"` : ''
    return `<td class="c-${key}${extra}" data-label="${label}"${ts}>${escapeHtml(cells[key])}</td>`
  }).join('')
  return `<tr data-id="${r.id}" data-topic="${escapeHtml(r.topic)}" data-zone="${escapeHtml(r.zone ?? '')}" data-state="${r.state}"${
    hidden ? ' hidden' : ''
  }>${tds}</tr>`
}

function renderGroups(d: PageData): string {
  const cards = d.groups.map((g) => renderGroup(g, d.info.coordination!.hasLeader)).join('\n')
  const q = d.groupQuery ?? { empty: false, limit: PAGE_GROUPS }
  const link = (change: Record<string, string | undefined>): string => {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries({ ...d.filter, prefix: q.prefix, empty: q.empty ? '1' : undefined, ...change })) if (v) params.set(k, v)
    return escapeHtml(`?${params}`)
  }
  const none = q.empty ? 'No groups on this backend' : 'No group with members on this backend'
  return `<section id="groups" aria-labelledby="groups-title" data-has-leader="${d.info.coordination!.hasLeader}" data-prefix="${escapeHtml(q.prefix ?? '')}" \
data-empty="${q.empty}" data-after="${escapeHtml(q.cursor ?? '')}" data-through="${escapeHtml(d.nextGroups ?? '')}" data-limit="${q.limit}">
<h2 id="groups-title">Groups${q.prefix ? ` starting with <code>${escapeHtml(q.prefix)}</code>` : ''}</h2>
<p class="group-filter">${
    q.empty
      ? `Empty groups shown: <a href="${link({ empty: undefined })}">hide them</a>`
      : `Groups with members only: <a href="${link({ empty: '1' })}">show empty groups too</a>`
  }</p>
<div id="group-list">${cards}</div>
<p id="no-groups" class="empty"${d.groups.length ? ' hidden' : ''}>${none}${q.prefix ? ' with this prefix' : ''}.</p>
${d.nextGroups ? `<p class="more"><a id="next-groups" href="${link({ cursor: d.nextGroups })}">Next groups</a></p>\n` : ''}</section>`
}

function renderGroup(g: GroupRow, hasLeader: boolean): string {
  const leader = !hasLeader || g.leader === undefined ? 'not reported by this driver' : g.leader ?? '(none)'
  const members = g.members.map((m) =>
    `<li><code class="member">${escapeHtml(m.member_id)}</code> <span class="caps">${escapeHtml(JSON.stringify(m.capabilities))}</span></li>`
  ).join('')
  return `<article class="group" data-group="${escapeHtml(g.group)}">
<h3>${escapeHtml(g.group)} <span class="count">${g.members.length} member${g.members.length === 1 ? '' : 's'}</span></h3>
${g.error ? `<p class="error">Cannot be read: ${escapeHtml(g.error.message)}</p>\n` : ''}<p class="leader">Leader: <b>${escapeHtml(leader)}</b></p>
<ul class="members">${members}</ul>
</article>`
}

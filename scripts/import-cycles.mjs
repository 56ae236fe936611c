#!/usr/bin/env node
// Lists the import cycles of src/: builds the graph of every `import … from`, `export … from` and
// `import('…')` between the TypeScript files (type-only imports included: a cycle of types is
// still two modules that cannot be read apart), then finds its strongly connected components
// (Tarjan). Prints each cycle's files and exits 1 when there is one.
//
//   node scripts/import-cycles.mjs [DIR]        DIR defaults to src
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = resolve(process.argv[2] ?? 'src')

/** Every .ts file below `dir`. */
function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

const SPECIFIER = /(?:^|[\s;}])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm

/** The files of `all` that `file` imports (relative specifiers only; `.js` names the `.ts` source). */
function importsOf(file, all) {
  const text = readFileSync(file, 'utf8')
  const out = new Set()
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2]
    if (!spec.startsWith('.')) continue
    const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts')
    for (const candidate of [target, `${target}.ts`, join(target, 'index.ts')]) {
      if (all.has(candidate)) {
        out.add(candidate)
        break
      }
    }
  }
  return [...out]
}

const all = new Set(files(root))
const graph = new Map([...all].map((f) => [f, importsOf(f, all)]))

// Tarjan's strongly connected components, iteratively (no recursion limit).
let index = 0
const indexOf = new Map()
const low = new Map()
const onStack = new Set()
const stack = []
const components = []
for (const start of graph.keys()) {
  if (indexOf.has(start)) continue
  const work = [[start, 0]]
  indexOf.set(start, index)
  low.set(start, index++)
  stack.push(start)
  onStack.add(start)
  while (work.length > 0) {
    const frame = work[work.length - 1]
    const [node, i] = frame
    const next = graph.get(node)
    if (i < next.length) {
      frame[1] += 1
      const to = next[i]
      if (!indexOf.has(to)) {
        indexOf.set(to, index)
        low.set(to, index++)
        stack.push(to)
        onStack.add(to)
        work.push([to, 0])
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), indexOf.get(to)))
      continue
    }
    work.pop()
    if (work.length > 0) {
      const parent = work[work.length - 1][0]
      low.set(parent, Math.min(low.get(parent), low.get(node)))
    }
    if (low.get(node) === indexOf.get(node)) {
      const component = []
      let member
      do {
        member = stack.pop()
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || graph.get(node).includes(node)) components.push(component)
    }
  }
}

const shown = (f) => relative(process.cwd(), f)
for (const component of components) {
  console.log(`cycle of ${component.length}:`)
  const members = new Set(component)
  for (const f of component.sort()) {
    console.log(`  ${shown(f)} -> ${graph.get(f).filter((t) => members.has(t)).map(shown).join(', ')}`)
  }
}
console.log(`${components.length} import cycles among ${all.size} files`)
process.exit(components.length > 0 ? 1 : 0)

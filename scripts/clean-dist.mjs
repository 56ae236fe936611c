// Empties dist/ before tsc writes it: tsc never deletes, so a module moved or removed in src/ would
// otherwise stay in dist/ under its old path, and be packed and shipped with the rest.
import { rmSync } from 'node:fs'

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })

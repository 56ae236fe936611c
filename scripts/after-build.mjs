// Makes the CLI executable after tsc has emitted it (tsc keeps the shebang but not the mode).
import { chmodSync, existsSync } from 'node:fs'

const cli = new URL('../dist/cli/bin.js', import.meta.url)
if (existsSync(cli)) chmodSync(cli, 0o755)

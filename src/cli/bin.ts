#!/usr/bin/env node
/** The `rollcall` executable. Exits explicitly so that nothing left open keeps it alive. */
import { main } from './main.js'

process.exit(await main(process.argv.slice(2)))

/**
 * docs/servicegroup.md's quick start in its own process, for the keep-alive rule: opens the
 * catalog, builds a ServiceGroup from the JSON options in argv[2], registers and joins, prints
 * "joined", then does what `mode` says and leaves the event loop with nothing of its own:
 * - `stay`: nothing more (a joined service must keep the process alive);
 * - `leave`: leave(), print "left" (the catalog stays open);
 * - `close`: close(), print "closed" (the process must then exit by itself).
 * Usage: node --import tsx test/servicegroup/quick-start-process.ts '{"mode":"stay","catalogUrl":…}'
 */
import { createServiceGroup, openCatalog, type ServiceGroupOptions } from '../../src/servicegroup/index.js'

interface Args extends Omit<ServiceGroupOptions, 'catalog'> {
  mode: 'stay' | 'leave' | 'close'
  catalogUrl: string
  tablePrefix?: string
  host: string
  binary: string
  topic: string
}

const { mode, catalogUrl, tablePrefix, host, binary, topic, ...options } = JSON.parse(process.argv[2] ?? '{}') as Args
const catalog = await openCatalog(catalogUrl, { tablePrefix })
const sg = await createServiceGroup({ ...options, catalog, closeCatalog: true })
const me = await sg.register({ host, binary, topic })
await sg.join(me.host, me.topic, me)
process.stdout.write('joined\n')
if (mode === 'leave') {
  await sg.leave(me.host, me.topic)
  process.stdout.write('left\n')
} else if (mode === 'close') {
  await sg.close()
  process.stdout.write('closed\n')
}

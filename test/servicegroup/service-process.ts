/**
 * A service in its own process, for tests that kill it: opens the catalog, builds a ServiceGroup
 * from the JSON options in argv[2], registers HOST/BINARY/TOPIC, joins, prints "joined <id>", and
 * reports until killed. SIGTERM leaves first (stopOnSignals), so the service is down at once.
 * Usage: node --import tsx test/servicegroup/service-process.ts '{"catalog":"sqlite:///…","host":…}'
 */
import { createServiceGroup, openCatalog, type ServiceGroupOptions } from '../../src/servicegroup/index.js'

interface Args extends Omit<ServiceGroupOptions, 'catalog'> {
  catalogUrl: string
  tablePrefix?: string
  host: string
  binary: string
  topic: string
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args
const { catalogUrl, tablePrefix, host, binary, topic, ...options } = args
const catalog = await openCatalog(catalogUrl, { tablePrefix })
const sg = await createServiceGroup({ ...options, catalog, closeCatalog: true })
const record = await sg.register({ host, binary, topic })
await sg.join(host, topic, record)
sg.stopOnSignals(['SIGTERM'])
process.stdout.write(`joined ${record.id}\n`)
setInterval(() => {}, 60_000)

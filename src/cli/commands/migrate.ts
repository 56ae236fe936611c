/**
 * `rollcall migrate check --from mc|zk --to tooz`: compares, per service, what the old and the new
 * driver say (up/down), lists the services they disagree on, and exits 1 while there are any (0
 * when they agree). Run it during a switch made with report_to_previous_driver: once every
 * service reports to both, it exits 0 and the old driver can go. Uses only the public APIs.
 */
import { checkMigration } from '../../servicegroup/index.js'
import { table, type Command } from '../command.js'
import { EXIT } from '../exit-codes.js'
import { ProgressLine } from '../progress.js'
import { CONFIG_OPTIONS, commandConfig } from './service.js'

/** The migrate commands. */
export const migrateCommands: Command[] = [
  {
    name: 'migrate check',
    summary: 'Compare what two service-group drivers say about every service; exit 1 while they disagree.',
    usage: '--from mc|zk --to tooz [--topic T] [--json] [--config FILE] [--set KEY=VALUE]...',
    options: { ...CONFIG_OPTIONS, from: { type: 'string' }, to: { type: 'string' }, topic: { type: 'string' }, json: { type: 'boolean' } },
    run: async (ctx) => {
      const { config, logger } = await commandConfig(ctx)
      const progress = new ProgressLine(ctx.out)
      progress.set('reading the catalog and both drivers')
      const report = await checkMigration(config, {
        from: (ctx.values.from as string | undefined) ?? '',
        to: (ctx.values.to as string | undefined) ?? 'tooz',
        topic: ctx.values.topic as string | undefined,
        logger,
        onProgress: (p) => progress.set(`checked ${p.checked} of ${p.total} services (topic ${p.topic})`),
      }).finally(() => progress.done())
      if (ctx.values.json) {
        ctx.out.json(report)
      } else {
        if (report.disagreements.length) {
          ctx.out.line(
            table(
              ['ID', 'Binary', 'Host', 'Topic', report.from, report.to],
              report.disagreements.map((d) => [String(d.id), d.binary, d.host, d.topic, d.from, d.to]),
            ),
          )
        }
        ctx.out.line(`${report.checked} services checked; ${report.disagreements.length} disagree between ${report.from} and ${report.to}`)
      }
      return report.disagreements.length ? EXIT.failure : EXIT.ok
    },
  },
]

/** `rollcall leader GROUP` (who leads) and `rollcall elect GROUP [-- COMMAND]` (campaign, like etcdctl elect). */
import { GroupNotFoundError } from '../../errors.js'
import { startCommand } from '../child.js'
import { CONNECTION_OPTIONS, DIAL_OPTIONS, type Command } from '../command.js'
import { waitUntil, withCoordinator } from '../connection.js'
import { EXIT } from '../exit-codes.js'
import { ProgressLine } from '../progress.js'

/** The leader command. */
export const leaderCommands: Command[] = [
  {
    name: 'leader',
    summary: 'Print the leader of GROUP ("(none)" when nobody leads); status 3 when the group does not exist.',
    usage: 'GROUP [--json] [--url URL]',
    positionals: ['GROUP'],
    options: { ...CONNECTION_OPTIONS, json: { type: 'boolean' } },
    optionHelp: { json: 'print {"group": GROUP, "leader": ID or null}' },
    run: (ctx) =>
      withCoordinator(ctx, async (c) => {
        const group = ctx.positionals[0]!
        const leader = await c.getLeader(group)
        if (leader === null && !(await c.getGroups()).includes(group)) throw new GroupNotFoundError(group)
        if (ctx.values.json) ctx.out.json({ group, leader })
        else ctx.out.line(leader ?? '(none)')
      }),
  },
]

/** The elect command. */
export const electCommands: Command[] = [
  {
    name: 'elect',
    summary: "Campaign for leader of GROUP and, once elected, print this member's id and stay leader until interrupted; with a COMMAND, run it while leader "
      + '(its exit status becomes ours). A leadership lost meanwhile stops COMMAND with SIGTERM and gives status 9.',
    usage: 'GROUP [--url URL] [--member ID] [-- COMMAND [ARGS...]]',
    positionals: ['GROUP'],
    takesCommand: true,
    options: DIAL_OPTIONS,
    run: (ctx) =>
      withCoordinator(ctx, async (c) => {
        const group = ctx.positionals[0]!
        let lost: string | undefined
        let onLost: () => void = () => {}
        c.on('leadershipLost', (e) => {
          if (e.group !== group) return
          lost = e.reason
          onLost()
        })
        const progress = new ProgressLine(ctx.out)
        const elected = new Promise<void>((resolve) => c.watchElectedAsLeader(group, () => resolve()))
        const started = Date.now()
        const slow = setTimeout(() => progress.set(`campaigning for leader of ${group}`, 'campaigning'), 1000)
        const tick = setInterval(
          () =>
            Date.now() - started > 1000 && progress.set(`campaigning for leader of ${group} (${Math.round((Date.now() - started) / 1000)} s)`, 'campaigning'),
          1000,
        )
        try {
          await Promise.race([elected, waitUntil(ctx.signal)])
        } finally {
          clearTimeout(slow)
          clearInterval(tick)
          progress.done()
        }
        if (!c.isLeader(group)) return EXIT.ok
        ctx.out.line(c.memberId)
        ctx.out.status(`rollcall: ${c.memberId} leads ${group}`, true)
        if (ctx.rest.length === 0) {
          await new Promise<void>((resolve) => {
            onLost = resolve
            void waitUntil(ctx.signal).then(resolve)
          })
        } else {
          const running = await startCommand(ctx.rest, ctx.out)
          onLost = () => {
            if (!running.exited) running.kill('SIGTERM')
          }
          const status = await running.status
          if (lost === undefined) {
            await c.standDownGroupLeader(group).catch(() => false)
            return status
          }
        }
        if (lost !== undefined) {
          ctx.out.error(`rollcall: lost the leadership of ${group}: ${lost}`)
          return EXIT.lockLost
        }
        return EXIT.ok
      }, { bounded: false }),
  },
]

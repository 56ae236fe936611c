/** `rollcall watch GROUP`: join and leave events as JSON lines until interrupted. */
import { DIAL_OPTIONS, type Command } from '../command.js'
import { waitUntil, withCoordinator } from '../connection.js'

/** The watch command. */
export const watchCommands: Command[] = [
  {
    name: 'watch',
    summary: 'Print join and leave events of a group as JSON lines (members present at start first, as "present"), until interrupted.',
    usage: 'GROUP [--url URL]',
    positionals: ['GROUP'],
    options: DIAL_OPTIONS,
    run: (ctx) =>
      withCoordinator(ctx, async (c) => {
        const group = ctx.positionals[0]!
        const at = (): string => new Date().toISOString()
        c.on('memberJoined', (e) => e.group === group && ctx.out.json({ event: 'joined', group, member: e.member, at: at() }))
        c.on('memberLeft', (e) => e.group === group && ctx.out.json({ event: 'left', group, member: e.member, at: at() }))
        c.on('connectionStateChanged', (e) => ctx.out.status(`connection ${e.state}`, true))
        const stop = await c.watchGroup(group)
        for (const member of await c.getMembers(group)) ctx.out.json({ event: 'present', group, member, at: at() })
        // On stderr, always: a script (or a test) knows from here on that no join or leave is missed.
        ctx.out.status(`watching ${group}`, true)
        await waitUntil(ctx.signal)
        await stop()
      }, { bounded: false }),
  },
]

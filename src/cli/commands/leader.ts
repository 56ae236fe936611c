/** `rollcall leader GROUP`: who leads a group. */
import { CONNECTION_OPTIONS, type Command } from '../command.js'
import { withCoordinator } from '../connection.js'

/** The leader command. */
export const leaderCommands: Command[] = [
  {
    name: 'leader',
    summary: 'Print the leader of GROUP ("(none)" when nobody leads; null with --json).',
    usage: 'GROUP [--json] [--url URL]',
    positionals: ['GROUP'],
    options: { ...CONNECTION_OPTIONS, json: { type: 'boolean' } },
    run: (ctx) => withCoordinator(ctx, async (c) => {
      const group = ctx.positionals[0]!
      const leader = await c.getLeader(group)
      if (ctx.values.json) ctx.out.json({ group, leader })
      else ctx.out.line(leader ?? '(none)')
    }),
  },
]

/** `rollcall group create|delete|list|join|leave|members`. */
import { InvalidArgumentError } from '../../errors.js'
import { CONNECTION_OPTIONS, DIAL_OPTIONS, secondsOption, table, jsonReplacer, type Command } from '../command.js'
import { waitUntil, withCoordinator } from '../connection.js'

function parseCapabilities(text: unknown): unknown {
  if (text === undefined) return null
  try {
    return JSON.parse(String(text))
  } catch {
    throw new InvalidArgumentError(`--capabilities takes JSON, e.g. '{"zone":"az1"}'; got ${JSON.stringify(text)}`)
  }
}

/** The group commands. */
export const groupCommands: Command[] = [
  {
    name: 'group create',
    summary: 'Create a group.',
    usage: 'GROUP [--url URL]',
    positionals: ['GROUP'],
    options: CONNECTION_OPTIONS,
    run: (ctx) => withCoordinator(ctx, (c) => c.createGroup(ctx.positionals[0]!)),
  },
  {
    name: 'group delete',
    summary: 'Delete an empty group.',
    usage: 'GROUP [--url URL]',
    positionals: ['GROUP'],
    options: CONNECTION_OPTIONS,
    run: (ctx) => withCoordinator(ctx, (c) => c.deleteGroup(ctx.positionals[0]!)),
  },
  {
    name: 'group list',
    summary: 'List the groups.',
    usage: '[--json] [--url URL]',
    options: { ...CONNECTION_OPTIONS, json: { type: 'boolean' } },
    run: (ctx) =>
      withCoordinator(ctx, async (c) => {
        const groups = await c.getGroups()
        if (ctx.values.json) ctx.out.json(groups)
        else for (const g of groups) ctx.out.line(g)
      }),
  },
  {
    name: 'group join',
    summary: 'Join a group and stay in it, heartbeating, until interrupted or --for SECONDS pass; then leave.',
    usage: 'GROUP [--capabilities JSON] [--for SECONDS] [--create] [--member ID] [--url URL]',
    positionals: ['GROUP'],
    options: { ...DIAL_OPTIONS, capabilities: { type: 'string' }, for: { type: 'string' }, create: { type: 'boolean' } },
    run: async (ctx) => {
      const group = ctx.positionals[0]!
      const caps = parseCapabilities(ctx.values.capabilities)
      const forSeconds = secondsOption(ctx.values.for, 'for')
      await withCoordinator(ctx, async (c) => {
        if (ctx.values.create) await c.joinGroupCreate(group, caps)
        else await c.joinGroup(group, caps)
        c.on('membershipLost', (e) => ctx.out.status(`membership of ${e.group} lost (${e.reason}); rejoining`, true))
        c.on('rejoined', (e) => ctx.out.status(`rejoined ${e.group}`, true))
        ctx.out.status(`joined ${group} as ${c.memberId}${forSeconds === undefined ? '; Ctrl-C to leave' : ` for ${forSeconds} s`}`)
        await waitUntil(ctx.signal, forSeconds === undefined ? undefined : forSeconds * 1000)
      }, { bounded: false })
    },
  },
  {
    name: 'group leave',
    summary: 'Leave a group as --member (a member that lost its process, for instance).',
    usage: 'GROUP --member ID [--url URL]',
    positionals: ['GROUP'],
    options: CONNECTION_OPTIONS,
    run: (ctx) => {
      if (!ctx.values.member && !ctx.env.ROLLCALL_MEMBER) {
        throw new InvalidArgumentError('group leave needs --member ID (or ROLLCALL_MEMBER): the member to remove')
      }
      return withCoordinator(ctx, (c) => c.leaveGroup(ctx.positionals[0]!))
    },
  },
  {
    name: 'group members',
    summary: 'List the live members of a group with their capabilities.',
    usage: 'GROUP [--json] [--url URL]',
    positionals: ['GROUP'],
    options: { ...CONNECTION_OPTIONS, json: { type: 'boolean' } },
    run: (ctx) =>
      withCoordinator(ctx, async (c) => {
        const members = await c.getMembersWithCapabilities(ctx.positionals[0]!)
        const rows = [...members].map(([member, capabilities]) => ({ member, capabilities }))
        if (ctx.values.json) ctx.out.json(rows)
        else ctx.out.line(table(['MEMBER', 'CAPABILITIES'], rows.map((r) => [r.member, JSON.stringify(r.capabilities, jsonReplacer) ?? 'null'])))
      }),
  },
]

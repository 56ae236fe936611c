/**
 * The `rollcall` command line: dispatch, help, signals and exit statuses. Each command lives in
 * src/cli/commands/ and uses only the public API. Errors are printed as one line (their message
 * is already free of credentials) and mapped to an exit status by their code.
 */
import { GroupNotFoundError, RollcallError, InvalidArgumentError } from '../errors.js'
import { redactUrl } from '../index.js'
import { commandHelpText, parseCommandArgs, processOutput, type Command, type Output } from './command.js'
import { groupCommands } from './commands/group.js'
import { electCommands, leaderCommands } from './commands/leader.js'
import { lockCommands } from './commands/lock.js'
import { watchCommands } from './commands/watch.js'
import { serviceCommands } from './commands/service.js'
import { migrateCommands } from './commands/migrate.js'
import { serveCommands } from './commands/serve.js'
import { demoCommands } from './commands/demo.js'
import { EXIT, exitStatusFor } from './exit-codes.js'

/** Every command, in help order. */
export const COMMANDS: Command[] = [
  ...groupCommands,
  ...watchCommands,
  ...lockCommands,
  ...leaderCommands,
  ...electCommands,
  ...serviceCommands,
  ...migrateCommands,
  ...serveCommands,
  ...demoCommands,
]

function findCommand(argv: string[]): { cmd: Command; args: string[] } | undefined {
  let best: { cmd: Command; args: string[] } | undefined
  for (const cmd of COMMANDS) {
    const words = cmd.name.split(' ')
    if (words.every((w, i) => argv[i] === w) && (!best || words.length > best.cmd.name.split(' ').length)) {
      best = { cmd, args: argv.slice(words.length) }
    }
  }
  return best
}

function help(out: Output, prefix?: string): void {
  const shown = COMMANDS.filter((c) => !prefix || c.name.startsWith(prefix))
  out.line('Usage: rollcall <command> [options]\n')
  out.line('Which of your services are alive right now. Commands:')
  const width = Math.max(...shown.map((c) => c.name.length))
  for (const c of shown) out.line(`  ${c.name.padEnd(width)}  ${c.summary}`)
  out.line('\nCoordination commands take --url URL (or ROLLCALL_URL) and --member ID (or ROLLCALL_MEMBER).')
  out.line('Run rollcall <command> --help for its options; docs/cli.md has the exit statuses.')
}

function commandHelp(out: Output, cmd: Command): void {
  out.line(commandHelpText(cmd))
}

/** The first word of a command group (`group`, `service`, `migrate`) that has no command of its own. */
function isGroupWord(word: string | undefined): boolean {
  return word !== undefined && !COMMANDS.some((c) => c.name === word) && COMMANDS.some((c) => c.name.startsWith(`${word} `))
}

/** Runs the CLI; resolves to the exit status. */
export async function main(argv: string[], out: Output = processOutput(), env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    help(out, argv[1])
    return argv.length === 0 ? EXIT.usage : EXIT.ok
  }
  if (argv[0] === '--version') {
    const { createRequire } = await import('node:module')
    out.line(String(createRequire(import.meta.url)('../../package.json').version))
    return EXIT.ok
  }
  if (isGroupWord(argv[0]) && (argv.length === 1 || argv[1] === '--help' || argv[1] === '-h')) {
    // `rollcall group --help`: the commands of that group.
    help(out, `${argv[0]} `)
    return argv.length === 1 ? EXIT.usage : EXIT.ok
  }
  const found = findCommand(argv)
  if (!found) {
    const near = COMMANDS.filter((c) => c.name.startsWith(argv[0]!))
    out.error(
      `rollcall: unknown command "${argv.slice(0, 2).join(' ')}"${
        near.length
          ? `; did you mean: ${near.map((c) => c.name).join(', ')}?`
          : ''
      } (rollcall --help lists commands)`,
    )
    return EXIT.usage
  }
  const controller = new AbortController()
  let interruptedBy: NodeJS.Signals | undefined
  const onSignal = (signal: NodeJS.Signals): void => {
    interruptedBy ??= signal
    controller.abort()
  }
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal)
  try {
    const { values, positionals, rest } = parseCommandArgs(found.cmd, found.args)
    if (values.help) {
      commandHelp(out, found.cmd)
      return EXIT.ok
    }
    const returned = await found.cmd.run({ values, positionals, rest, signal: controller.signal, env, out })
    const status = typeof returned === 'number' ? returned : EXIT.ok
    // Ctrl-C is 130 everywhere (a COMMAND after "--" gives its own status); SIGTERM is a clean stop.
    if (interruptedBy === 'SIGINT' && status === EXIT.ok && rest.length === 0) return EXIT.interrupted
    return status
  } catch (err) {
    if (err instanceof RollcallError) {
      if (interruptedBy === 'SIGINT' && (err.code === 'COORDINATOR_STOPPED' || err.name === 'AbortError')) return EXIT.interrupted
      out.error(`rollcall: ${redactUrl(cliMessage(err))}`)
      return err instanceof InvalidArgumentError ? EXIT.usage : exitStatusFor(err.code)
    }
    if (controller.signal.aborted) return EXIT.interrupted
    out.error(`rollcall: unexpected error: ${redactUrl((err as Error)?.stack ?? String(err))}`)
    return EXIT.failure
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal)
  }
}

/**
 * An error's message as a CLI user needs it: where the library's message names a library call
 * (joinGroupCreate()), the command that does the same.
 */
function cliMessage(err: RollcallError): string {
  if (err instanceof GroupNotFoundError) {
    const group = JSON.stringify(err.groupId)
    const arg = /^[\w.:@+-]+$/.test(err.groupId) ? err.groupId : `'${err.groupId.replace(/'/g, "'\\''")}'`
    return `Group ${group} does not exist; rollcall group list shows the groups there are, rollcall group create ${arg} creates it`
  }
  return err.message
}

/**
 * A member in its own process: connects, joins GROUP as MEMBER with CAPS, prints "joined", then
 * heartbeats until killed. Tests kill it with SIGKILL to see how fast the others notice. With
 * `lead` it also runs for leader of GROUP and prints "leading" once elected.
 * Usage: node --import tsx test/support/member-process.ts URL GROUP MEMBER [CAPS_JSON] [lead]
 */
import { connect } from '../../src/index.js'

const [url, group, member, caps, lead] = process.argv.slice(2)
if (!url || !group || !member) {
  console.error('usage: member-process.ts URL GROUP MEMBER [CAPS_JSON]')
  process.exit(2)
}
const coordinator = await connect(url, { memberId: member })
await coordinator.joinGroupCreate(group, caps ? JSON.parse(caps) : null)
process.stdout.write('joined\n')
if (lead === 'lead') coordinator.watchElectedAsLeader(group, () => void process.stdout.write('leading\n'))
setInterval(() => {}, 60_000)
process.on('SIGTERM', () => void coordinator.stop().then(() => process.exit(0)))

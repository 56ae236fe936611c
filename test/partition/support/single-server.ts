/**
 * Single servers for partition runs (issue 27): PostgreSQL, MariaDB or memcached on one server
 * host, as a one-node {@link Cluster} so that run.ts and the nemesis treat it as they treat a
 * replicated cluster. The server itself is test/fault/support/sql-servers.ts's or
 * test/support/servers.ts's private server, placed in the host's namespace (on a free port).
 * It has no leader (a single server elects nobody): the nemesis's leader kinds are not drawn for
 * it (nemesis.ts SINGLE_SERVER_FAULT_KINDS). Its pause stops every process it runs (PostgreSQL
 * serves each connection from a backend process of its own, which SIGSTOP of the postmaster alone
 * would leave answering).
 */
import type { Cluster, ClusterNode, Placement } from '../../support/cluster.js'
import { startMemcached, type PrivateServer } from '../../support/servers.js'
import { startMysql, startPostgresql } from '../../fault/support/sql-servers.js'

/** The single servers a partition run can start. */
export type SingleServerKind = 'postgresql' | 'mysql' | 'memcached'

const STARTERS: Record<SingleServerKind, (p: { address: string; netns: string }) => Promise<PrivateServer>> = {
  postgresql: startPostgresql,
  mysql: startMysql,
  memcached: startMemcached,
}

/** Starts a `kind` server on the placement's first host. */
export async function startSingleServer(kind: SingleServerKind, placement: Placement): Promise<Cluster> {
  const host = placement.hosts[0]
  if (!host || placement.hosts.length !== 1) throw new Error(`a single ${kind} server needs a placement of one host, got ${placement.hosts.length}`)
  const server = await STARTERS[kind](host)
  let running = true
  const node: ClusterNode = {
    name: kind,
    port: server.port,
    address: host.address,
    get pid() {
      return running ? server.pid : undefined
    },
    get running() {
      return running
    },
    async kill() {
      server.kill()
      running = false
    },
    async start() {
      await server.start()
      running = true
    },
    pause: () => server.pause(),
    resume: () => server.resume(),
  }
  const base = server.url
  return {
    kind,
    nodes: [node],
    url: (query) => `${base}${query ? `?${query}` : ''}`,
    leader: async () => undefined,
    // start() returned once the server answered the test's own queries.
    healthy: async () => {},
    describe: async () => `${kind} ${running ? 'running' : 'down'} at ${host.address}:${server.port}`,
    async stop() {
      running = false
      await server.stop()
    },
  }
}

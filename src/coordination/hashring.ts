/**
 * tooz's consistent hash ring, bit for bit, so that a mixed fleet of Python and Node members
 * agrees on who owns what.
 *
 * For each node the hash object starts seeded with the node's UTF-8 bytes and is updated with
 * them once more before each point is recorded: the points are md5(key·2), md5(key·3), ...,
 * md5(key·(partitions·weight + 1)) as 128-bit integers (md5(key) itself is not on the ring).
 * A lookup hashes the data, bisects to the right and walks clockwise, wrapping at the end.
 */
import { createHash, getHashes, type Hash } from 'node:crypto'
import { InvalidArgumentError, UnknownNodeError } from '../errors.js'

/** HashRing construction options. */
export interface HashRingOptions {
  /** Points per unit of weight (tooz default 32). */
  partitions?: number
  /** Any hash node:crypto knows (tooz default md5). */
  hashFunction?: string
}

/** Options of getNodes(). */
export interface GetNodesOptions {
  /** Nodes to skip, e.g. ones known to be down. */
  ignoreNodes?: Iterable<string>
  /** How many distinct nodes to return (capped at the number of candidates). */
  replicas?: number
}

const encoder = new TextEncoder()

/** A consistent hash ring compatible with `tooz.hashring.HashRing`. */
export class HashRing {
  /** Default points per unit of weight. */
  static readonly DEFAULT_PARTITIONS = 32
  readonly #partitions: number
  readonly #hash: string
  readonly #nodes = new Map<string, number>()
  readonly #ring = new Map<bigint, string>()
  #points: bigint[] = []

  constructor(nodes: Iterable<string> = [], options: HashRingOptions = {}) {
    this.#partitions = options.partitions ?? HashRing.DEFAULT_PARTITIONS
    this.#hash = options.hashFunction ?? 'md5'
    if (!Number.isInteger(this.#partitions) || this.#partitions < 1) throw new InvalidArgumentError('partitions must be a whole number >= 1')
    if (!getHashes().includes(this.#hash)) throw new InvalidArgumentError(`Hash function "${this.#hash}" is not available; try one of md5, sha1, sha256`)
    this.addNodes(new Set(nodes))
  }

  /** Nodes on the ring with their weights. */
  get nodes(): ReadonlyMap<string, number> {
    return this.#nodes
  }

  /** Number of points on the ring (partitions × total weight, less any collisions). */
  get size(): number {
    return this.#points.length
  }

  /** Adds one node; a weight of 2 takes twice the share of a weight of 1. */
  addNode(node: string, weight = 1): void {
    this.addNodes([node], weight)
  }

  /** Adds nodes with one weight. */
  addNodes(nodes: Iterable<string>, weight = 1): void {
    if (!Number.isInteger(weight) || weight < 1) throw new InvalidArgumentError(`weight must be a whole number >= 1, not ${weight}`)
    for (const node of nodes) {
      for (const point of this.#pointsOf(node, weight)) this.#ring.set(point, node)
      this.#nodes.set(node, weight)
    }
    this.#sort()
  }

  /** Removes a node (UnknownNodeError if it is not on the ring). */
  removeNode(node: string): void {
    const weight = this.#nodes.get(node)
    if (weight === undefined) throw new UnknownNodeError(node)
    this.#nodes.delete(node)
    for (const point of this.#pointsOf(node, weight)) this.#ring.delete(point)
    this.#sort()
  }

  /** The nodes that `data` maps onto: one, or `replicas` distinct ones. */
  getNodes(data: string | Uint8Array, options: GetNodesOptions = {}): Set<string> {
    const ignore = new Set(options.ignoreNodes ?? [])
    const candidates = [...this.#nodes.keys()].filter((n) => !ignore.has(n)).length
    const replicas = Math.min(options.replicas ?? 1, candidates)
    const out = new Set<string>()
    if (replicas <= 0) return out
    let i = this.#position(toInt(this.#digest(typeof data === 'string' ? encoder.encode(data) : data)))
    while (out.size < replicas) {
      const node = this.#ring.get(this.#points[i]!)!
      if (!ignore.has(node)) out.add(node)
      i = i + 1 < this.#points.length ? i + 1 : 0
    }
    return out
  }

  #pointsOf(node: string, weight: number): bigint[] {
    const key = encoder.encode(node)
    const h = createHash(this.#hash).update(key)
    const out: bigint[] = []
    for (let r = 0; r < this.#partitions * weight; r++) {
      h.update(key)
      out.push(toInt(digestOf(h)))
    }
    return out
  }

  #digest(data: Uint8Array): Buffer {
    return createHash(this.#hash).update(data).digest()
  }

  /** bisect_right over the sorted points, wrapping past the end to 0. */
  #position(value: bigint): number {
    let lo = 0
    let hi = this.#points.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (value < this.#points[mid]!) hi = mid
      else lo = mid + 1
    }
    return lo < this.#points.length ? lo : 0
  }

  #sort(): void {
    this.#points = [...this.#ring.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  }
}

/** The digest so far, leaving `h` usable for further updates. */
function digestOf(h: Hash): Buffer {
  return h.copy().digest()
}

function toInt(digest: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(digest).toString('hex')}`)
}

/**
 * tooz's consistent hash ring, bit for bit, so that a mixed fleet of Python and Node members
 * agrees on who owns what.
 *
 * A node is a string (placed by its UTF-8 bytes) or a Uint8Array (placed by those bytes, as tooz
 * places a Python `bytes` node, UTF-8 or not); two Uint8Arrays with the same bytes are one node.
 *
 * For each node the hash object starts seeded with the node's bytes and is updated with
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

/** A ring node: a string, or bytes (tooz accepts both). */
export type HashRingNode = string | Uint8Array

/** Options of getNodes(). */
export interface GetNodesOptions<N extends HashRingNode = string> {
  /** Nodes to skip, e.g. ones known to be down. */
  ignoreNodes?: Iterable<N>
  /** How many distinct nodes to return (capped at the number of candidates). */
  replicas?: number
}

const encoder = new TextEncoder()

interface Entry<N> {
  node: N
  weight: number
}

/** One key per node, so that equal bytes are one node and a string never equals bytes. */
function keyOf(node: HashRingNode): string {
  if (typeof node === 'string') return `s${node}`
  if (node instanceof Uint8Array) return `b${Buffer.from(node.buffer, node.byteOffset, node.byteLength).toString('latin1')}`
  throw new InvalidArgumentError(`A hash ring node must be a string or a Uint8Array, not ${node === null ? 'null' : typeof node}`)
}

function bytesOf(node: HashRingNode): Uint8Array {
  return typeof node === 'string' ? encoder.encode(node) : node
}

/** A consistent hash ring compatible with `tooz.hashring.HashRing`. */
export class HashRing<N extends HashRingNode = string> {
  /** Default points per unit of weight. */
  static readonly DEFAULT_PARTITIONS = 32
  readonly #partitions: number
  readonly #hash: string
  readonly #entries = new Map<string, Entry<N>>()
  readonly #ring = new Map<bigint, string>()
  #points: bigint[] = []
  #nodes: Map<N, number> | undefined

  constructor(nodes: Iterable<NoInfer<N>> = [], options: HashRingOptions = {}) {
    this.#partitions = options.partitions ?? HashRing.DEFAULT_PARTITIONS
    this.#hash = options.hashFunction ?? 'md5'
    if (!Number.isInteger(this.#partitions) || this.#partitions < 1) throw new InvalidArgumentError('partitions must be a whole number >= 1')
    if (!getHashes().includes(this.#hash)) throw new InvalidArgumentError(`Hash function "${this.#hash}" is not available; try one of md5, sha1, sha256`)
    this.addNodes(nodes)
  }

  /** Nodes on the ring with their weights (a bytes node as the Uint8Array first added). */
  get nodes(): ReadonlyMap<N, number> {
    this.#nodes ??= new Map([...this.#entries.values()].map((e) => [e.node, e.weight]))
    return this.#nodes
  }

  /** Number of points on the ring (partitions × total weight, less any collisions). */
  get size(): number {
    return this.#points.length
  }

  /** True when `node` (or a Uint8Array with its bytes) is on the ring. */
  has(node: N): boolean {
    return this.#entries.has(keyOf(node))
  }

  /** Adds one node; a weight of 2 takes twice the share of a weight of 1. */
  addNode(node: N, weight = 1): void {
    this.addNodes([node], weight)
  }

  /** Adds nodes with one weight (a node already there is placed again with this weight, as in tooz). */
  addNodes(nodes: Iterable<N>, weight = 1): void {
    if (!Number.isInteger(weight) || weight < 1) throw new InvalidArgumentError(`weight must be a whole number >= 1, not ${weight}`)
    const unique = new Map<string, N>()
    for (const node of nodes) if (!unique.has(keyOf(node))) unique.set(keyOf(node), node)
    for (const [key, node] of unique) {
      for (const point of this.#pointsOf(node, weight)) this.#ring.set(point, key)
      this.#entries.set(key, { node: this.#entries.get(key)?.node ?? node, weight })
    }
    this.#changed()
  }

  /** Removes a node (UnknownNodeError if it is not on the ring). */
  removeNode(node: N): void {
    const key = keyOf(node)
    const entry = this.#entries.get(key)
    if (entry === undefined) throw new UnknownNodeError(typeof node === 'string' ? node : `b'${Buffer.from(node).toString('hex')}' (hex)`)
    this.#entries.delete(key)
    for (const point of this.#pointsOf(node, entry.weight)) this.#ring.delete(point)
    this.#changed()
  }

  /** The nodes that `data` maps onto: one, or `replicas` distinct ones. */
  getNodes(data: string | Uint8Array, options: GetNodesOptions<N> = {}): Set<N> {
    const ignore = new Set([...(options.ignoreNodes ?? [])].map(keyOf))
    const candidates = [...this.#entries.keys()].filter((k) => !ignore.has(k)).length
    const replicas = Math.min(options.replicas ?? 1, candidates)
    const out = new Set<N>()
    if (replicas <= 0) return out
    const seen = new Set<string>()
    let i = this.#position(toInt(this.#digest(bytesOf(data))))
    while (seen.size < replicas) {
      const key = this.#ring.get(this.#points[i]!)!
      if (!ignore.has(key) && !seen.has(key)) {
        seen.add(key)
        out.add(this.#entries.get(key)!.node)
      }
      i = i + 1 < this.#points.length ? i + 1 : 0
    }
    return out
  }

  #pointsOf(node: N, weight: number): bigint[] {
    const key = bytesOf(node)
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

  #changed(): void {
    this.#nodes = undefined
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

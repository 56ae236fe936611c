// The whole suite against ZooKeeper at an IPv6 literal (zookeeper://[::1]:PORT, the plain port of
// backends.sh's second ZooKeeper, bound to ::).
import { describeConformance } from './suite.js'

await describeConformance('zookeeper-ipv6')

import { describeConformance } from './suite.js'

await describeConformance('etcd3')

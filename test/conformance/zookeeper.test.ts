import { describeConformance } from './suite.js'

await describeConformance('zookeeper')

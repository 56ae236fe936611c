import { describeServiceGroup } from '../suite.js'

describeServiceGroup('zk-zookeeper')

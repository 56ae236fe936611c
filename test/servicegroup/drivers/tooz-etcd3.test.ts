import { describeServiceGroup } from '../suite.js'

describeServiceGroup('tooz-etcd3')

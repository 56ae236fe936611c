import { describeServiceGroup } from '../suite.js'

describeServiceGroup('tooz-memcached')

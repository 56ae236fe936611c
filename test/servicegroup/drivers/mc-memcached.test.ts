import { describeServiceGroup } from '../suite.js'

describeServiceGroup('mc-memcached')

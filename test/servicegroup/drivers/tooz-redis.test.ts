import { describeServiceGroup } from '../suite.js'

describeServiceGroup('tooz-redis')

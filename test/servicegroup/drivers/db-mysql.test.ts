import { describeServiceGroup } from '../suite.js'

describeServiceGroup('db-mysql')

/** Placeholder while the zookeeper driver is written; connect() reports it plainly. */
import { NotSupportedError } from '../../errors.js'
import { defineDriver } from '../driver.js'

export default defineDriver({
  name: 'zookeeper',
  summary: 'Not written yet.',
  urlForms: [],
  consistency: '',
  hazards: [],
  capabilities: [],
  options: {},
  create() {
    throw new NotSupportedError('connections yet', 'zookeeper', 'this driver is still being written')
  },
})

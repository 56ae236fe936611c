/** Placeholder while the mysql driver is written; connect() reports it plainly. */
import { NotSupportedError } from '../../errors.js'
import { defineDriver } from '../driver.js'

export default defineDriver({
  name: 'mysql',
  summary: 'Not written yet.',
  urlForms: [],
  consistency: '',
  hazards: [],
  capabilities: [],
  options: {},
  create() {
    throw new NotSupportedError('connections yet', 'mysql', 'this driver is still being written')
  },
})

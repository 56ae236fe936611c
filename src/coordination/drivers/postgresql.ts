/** Placeholder while the postgresql driver is written; connect() reports it plainly. */
import { NotSupportedError } from '../../errors.js'
import { defineDriver } from '../driver.js'

export default defineDriver({
  name: 'postgresql',
  summary: 'Not written yet.',
  urlForms: [],
  consistency: '',
  hazards: [],
  capabilities: [],
  options: {},
  create() {
    throw new NotSupportedError('connections yet', 'postgresql', 'this driver is still being written')
  },
})

/** Placeholder while the file driver is written; connect() reports it plainly. */
import { NotSupportedError } from '../../errors.js'
import { defineDriver } from '../driver.js'

export default defineDriver({
  name: 'file',
  summary: 'Not written yet.',
  urlForms: [],
  consistency: '',
  hazards: [],
  capabilities: [],
  options: {},
  create() {
    throw new NotSupportedError('connections yet', 'file', 'this driver is still being written')
  },
})

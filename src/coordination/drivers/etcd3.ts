/** Placeholder while the etcd3 driver is written; connect() reports it plainly. */
import { NotSupportedError } from '../../errors.js'
import { defineDriver } from '../driver.js'

export default defineDriver({
  name: 'etcd3',
  summary: 'Not written yet.',
  urlForms: [],
  consistency: '',
  hazards: [],
  capabilities: [],
  options: {},
  create() {
    throw new NotSupportedError('connections yet', 'etcd3', 'this driver is still being written')
  },
})

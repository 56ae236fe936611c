/** Partition short form on memcached, one server whose clients are cut off (test/partition/support/short-form.ts); the full form: npm run test:partitions. */
import { shortFormTest } from './support/short-form.js'

shortFormTest('memcached', 2711)

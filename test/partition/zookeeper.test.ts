/** Partition short form on zookeeper (test/partition/support/short-form.ts); the full form: npm run test:partitions. */
import { shortFormTest } from './support/short-form.js'

shortFormTest('zookeeper', 2701)

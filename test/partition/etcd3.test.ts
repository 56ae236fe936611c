/** Partition short form on etcd3 (test/partition/support/short-form.ts); the full form: npm run test:partitions. */
import { shortFormTest } from './support/short-form.js'

shortFormTest('etcd3', 2702)

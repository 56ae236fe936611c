#!/usr/bin/python3
"""Python tooz (Debian's python3-tooz 3.1) side of the rollcall benchmarks. Run with /usr/bin/python3.

Usage: tooz_bench.py ROLE 'JSON-ARGS'
One-shot roles (join, heartbeat, read, locks) print one JSON line with their result and exit.
Long-lived roles (victim, observer, candidate, leader_observer, contender) print {"ready": true}
once set up, then JSON lines as events happen; a contender waits for "go" on stdin first. Times
in events are wall-clock milliseconds (time.time), comparable with Node's Date.now().
Every loop is bounded by the "seconds" argument or by the parent killing the process.
"""
import json
import math
import sys
import threading
import time


def install_etcd3gw_shim():
    # Debian's etcd3gw 2.0 client() factory lacks the api_path argument tooz 3.1 passes
    # (shared/reference/oracle.md); same shim as test/support/tooz-peer.py.
    import etcd3gw
    import importlib
    client_mod = importlib.import_module('etcd3gw.client')

    def client(host='localhost', port=2379, ca_cert=None, cert_key=None, cert_cert=None,
               timeout=None, protocol='http', api_path=None):
        return client_mod.Etcd3Client(host=host, port=port, protocol=protocol, ca_cert=ca_cert,
                                      cert_key=cert_key, cert_cert=cert_cert, timeout=timeout,
                                      api_path=api_path)
    etcd3gw.client = client
    client_mod.client = client


def out(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


def summary(samples):
    """Nearest-rank percentiles in ms, as bench/lib/stats.ts computes them."""
    s = sorted(samples)
    if not s:
        return {'n': 0}

    def pct(p):
        rank = math.ceil(p / 100.0 * len(s))
        return s[min(len(s) - 1, max(0, rank - 1))]
    r = lambda x: round(x, 3)
    return {'n': len(s), 'min': r(s[0]), 'p50': r(pct(50)), 'p99': r(pct(99)), 'max': r(s[-1]),
            'mean': r(sum(s) / len(s))}


def coordinator(url, member, heart=False):
    from tooz import coordination
    c = coordination.get_coordinator(url, member.encode())
    c.start(start_heart=heart)
    return c


def ensure_group(c, group):
    from tooz import coordination
    try:
        c.create_group(group).get()
    except coordination.GroupAlreadyExist:
        pass


def stop_all(coords):
    for c in coords:
        try:
            c.stop()
        except Exception:
            pass


def many(url, prefix, n):
    """n started coordinators (no heart: the scenario beats itself or is shorter than the TTL)."""
    return [coordinator(url, '%s-%d' % (prefix, i)) for i in range(n)]


def role_join(a):
    g = a['group'].encode()
    t0 = time.perf_counter()
    coords = many(a['url'], a['prefix'], a['n'])
    connect_s = time.perf_counter() - t0
    ensure_group(coords[0], g)
    samples = []
    t0 = time.perf_counter()
    for c in coords:
        t = time.perf_counter()
        c.join_group(g, a['caps']).get()
        samples.append((time.perf_counter() - t) * 1000)
    total = time.perf_counter() - t0
    stop_all(coords)
    out({'samples': summary(samples), 'perSecond': round(len(samples) / total, 1), 'connectSeconds': round(connect_s, 3)})


def role_heartbeat(a):
    g = a['group'].encode()
    coords = many(a['url'], a['prefix'], a['n'])
    ensure_group(coords[0], g)
    for c in coords:
        c.join_group(g, a['caps']).get()
    lock = threading.Lock()
    samples = []
    errors = [0]
    end = time.perf_counter() + a['seconds']

    def loop(c):
        mine = []
        while time.perf_counter() < end:
            t = time.perf_counter()
            try:
                c.heartbeat()
                mine.append((time.perf_counter() - t) * 1000)
            except Exception:
                errors[0] += 1
        with lock:
            samples.extend(mine)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(c,)) for c in coords]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    stop_all(coords)
    out({'samples': summary(samples), 'perSecond': round(len(samples) / elapsed, 1), 'errors': errors[0]})


def role_read(a):
    """get_members, and capabilities the only way tooz 3.1 has: one get_member_capabilities per
    member (all submitted before the first is awaited, tooz's best case)."""
    g = a['group'].encode()
    c = coordinator(a['url'], a['prefix'])
    results = {}
    for kind in a['kinds']:
        samples = []
        t_start = time.perf_counter()
        members = 0
        while len(samples) < a['maxRuns'] and (len(samples) < 1 or (time.perf_counter() - t_start) * 1000 < a['budgetMs']):
            t = time.perf_counter()
            ids = c.get_members(g).get()
            if kind == 'caps':
                futures = [(m, c.get_member_capabilities(g, m)) for m in ids]
                caps = {m: f.get() for m, f in futures}
                members = len(caps)
            else:
                members = len(ids)
            samples.append((time.perf_counter() - t) * 1000)
        results[kind] = {'samples': summary(samples), 'members': members}
    c.stop()
    out(results)


def role_locks(a):
    """Acquire+release of one lock in a closed loop. Waits for "go" on stdin when contended."""
    c = coordinator(a['url'], a['prefix'], heart=True)
    lock = c.get_lock(a['name'].encode())
    out({'ready': True})
    if a.get('wait'):
        sys.stdin.readline()

    def acquire_by(deadline):
        try:
            return lock.acquire(blocking=max(0.1, deadline - time.perf_counter()))
        except Exception:  # several tooz 3.1 drivers raise (tenacity RetryError, LockTimeout) on a timed-out wait
            return False

    # Uncounted first, as the rollcall agent does: every contender loops for warmupSeconds.
    warm_end = time.perf_counter() + a.get('warmupSeconds', 0)
    while time.perf_counter() < warm_end:
        if acquire_by(warm_end):
            lock.release()
    waits = []
    cycles = []
    end = time.perf_counter() + a['seconds']
    t0 = time.perf_counter()
    while time.perf_counter() < end:
        t = time.perf_counter()
        if not acquire_by(end):
            continue
        waits.append((time.perf_counter() - t) * 1000)
        if a.get('holdMs'):
            time.sleep(a['holdMs'] / 1000.0)
        lock.release()
        cycles.append((time.perf_counter() - t) * 1000)
    elapsed = time.perf_counter() - t0
    c.stop()
    out({'count': len(waits), 'perSecond': round(len(waits) / elapsed, 1), 'waits': summary(waits), 'cycles': summary(cycles)})


def role_victim(a):
    from tooz import coordination
    c = coordinator(a['url'], a['member'], heart=True)
    try:
        c.create_group(a['group'].encode()).get()
    except coordination.GroupAlreadyExist:
        pass
    c.join_group(a['group'].encode(), a['caps']).get()
    out({'ready': True})
    time.sleep(a.get('seconds', 120))
    c.stop()


def role_observer(a):
    """Reports every member that leaves, as run_watchers() tells it, polling every pollMs. Where
    the driver has no watchers (etcd3gw: NotImplemented), diffs get_members() instead, as an
    application would have to."""
    from tooz import NotImplemented as ToozNotImplemented
    g = a['group'].encode()
    c = coordinator(a['url'], a['member'], heart=True)
    ensure_group(c, g)

    def left(event):
        out({'left': event.member_id.decode(), 't': time.time() * 1000})
    try:
        c.watch_leave_group(g, left)
        c.run_watchers()
        mode = 'run_watchers'
    except ToozNotImplemented:
        mode = 'get_members'
    out({'ready': True, 'mode': mode})
    end = time.time() + a.get('seconds', 120)
    seen = None
    while time.time() < end:
        if mode == 'run_watchers':
            c.run_watchers()
        else:
            now = set(c.get_members(g).get())
            if seen is not None:
                for m in seen - now:
                    out({'left': m.decode(), 't': time.time() * 1000})
            seen = now
        time.sleep(a['pollMs'] / 1000.0)
    c.stop()


def role_candidate(a):
    g = a['group'].encode()
    c = coordinator(a['url'], a['member'], heart=True)
    ensure_group(c, g)
    c.watch_elected_as_leader(g, lambda event: out({'elected': a['member'], 't': time.time() * 1000}))
    out({'ready': True})
    end = time.time() + a.get('seconds', 120)
    while time.time() < end:
        c.run_watchers()
        time.sleep(a['pollMs'] / 1000.0)
    c.stop()


def role_leader_observer(a):
    """Polls get_leader() for each group and reports every change."""
    c = coordinator(a['url'], a['member'], heart=True)
    last = {}
    out({'ready': True})
    end = time.time() + a.get('seconds', 120)
    while time.time() < end:
        for g in a['groups']:
            try:
                v = c.get_leader(g.encode()).get()
            except Exception as e:
                out({'error': type(e).__name__, 'message': str(e)})
                return
            v = v.decode() if isinstance(v, bytes) else v
            if last.get(g) != v:
                last[g] = v
                out({'group': g, 'leader': v, 't': time.time() * 1000})
        time.sleep(a['pollMs'] / 1000.0)
    c.stop()


ROLES = {'join': role_join, 'heartbeat': role_heartbeat, 'read': role_read, 'locks': role_locks,
         'victim': role_victim, 'observer': role_observer, 'candidate': role_candidate,
         'leader_observer': role_leader_observer}

if __name__ == '__main__':
    role, args = sys.argv[1], json.loads(sys.argv[2])
    if args['url'].startswith('etcd3'):
        install_etcd3gw_shim()
    try:
        ROLES[role](args)
    except Exception as e:  # the parent reports it in the results
        out({'error': type(e).__name__, 'message': str(e)})
        sys.exit(1)

#!/usr/bin/python3
"""A Python tooz member driven over stdin/stdout, for interop tests (run with /usr/bin/python3).

Usage: tooz-peer.py URL MEMBER_ID
Each input line is a JSON request {"op": ..., ...}; each output line is {"ok": true, "result": ...}
or {"ok": false, "error": <exception class>, "message": ...}. Bytes travel as {"__bytes__": hex}.
Ids are sent to tooz as bytes unless the request says "str": true (tooz 3.1 builds Redis lock keys
differently for the two).
"""
import binascii
import json
import sys


def install_etcd3gw_shim():
    # Debian's etcd3gw 2.0 client() factory lacks the api_path argument tooz 3.1 passes; the
    # Etcd3Client class has it (shared/reference/oracle.md).
    import etcd3gw
    import importlib
    client_mod = importlib.import_module('etcd3gw.client')  # "import etcd3gw.client as" binds the client() function

    def client(host='localhost', port=2379, ca_cert=None, cert_key=None, cert_cert=None,
               timeout=None, protocol='http', api_path=None):
        return client_mod.Etcd3Client(host=host, port=port, protocol=protocol, ca_cert=ca_cert,
                                      cert_key=cert_key, cert_cert=cert_cert, timeout=timeout,
                                      api_path=api_path)
    etcd3gw.client = client
    client_mod.client = client


def install_kazoo_tls(coord, url):
    # tooz 3.1 ignores use_ssl and passes no TLS settings to kazoo (its _make_client knows none), so
    # for a URL with use_ssl=true the kazoo client tooz made (not started yet) is replaced by one
    # built from the same hosts, timeout and digest auth plus kazoo's TLS arguments, named as the
    # URL names them (rollcall's names are kazoo's). Everything else stays tooz's driver.
    from urllib.parse import parse_qs, urlsplit
    from kazoo.client import KazooClient
    query = {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
    if query.get('use_ssl', '').lower() not in ('1', 'true', 'yes'):
        return
    old = coord._coord
    coord._coord = KazooClient(
        hosts=','.join(('[%s]:%s' if ':' in h else '%s:%s') % (h, p) for h, p in old.hosts),
        timeout=old._session_timeout / 1000.0,
        auth_data=old.auth_data, default_acl=old.default_acl,
        use_ssl=True, verify_certs=query.get('verify_certs', 'true').lower() in ('1', 'true', 'yes'),
        ca=query.get('ca'), certfile=query.get('certfile'), keyfile=query.get('keyfile'),
        keyfile_password=query.get('keyfile_password'))
    coord._timeout_exception = coord._coord.handler.timeout_exception


def to_json(value):
    if isinstance(value, bytes):
        return {'__bytes__': binascii.hexlify(value).decode()}
    if isinstance(value, dict):
        return {(k.decode() if isinstance(k, bytes) else k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    return value


def from_json(value):
    if isinstance(value, dict):
        if set(value) == {'__bytes__'}:
            return binascii.unhexlify(value['__bytes__'])
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def main():
    url, member = sys.argv[1], sys.argv[2]
    if url.startswith('etcd3'):
        install_etcd3gw_shim()
    from tooz import coordination
    coord = coordination.get_coordinator(url, member.encode())
    if url.startswith(('kazoo', 'zookeeper')):
        install_kazoo_tls(coord, url)
    coord.start(start_heart=True)
    locks = {}
    elected = []

    def ident(req, key):
        v = req[key]
        return v if req.get('str') else v.encode()

    def lock(req):
        name = ident(req, 'name')
        if name not in locks:
            locks[name] = coord.get_lock(name)
        return locks[name]

    kazoo_locks = {}

    def kazoo_lock(req):
        # kazoo's ReadLock / WriteLock on tooz's lock path (ZooKeeper only; tooz has no shared lock there).
        key = (req['kind'], req['name'])
        if key not in kazoo_locks:
            path = coord._paths_join('/', coord._namespace, 'locks', req['name'])
            recipe = {'read': coord._coord.ReadLock, 'write': coord._coord.WriteLock}[req['kind']]
            kazoo_locks[key] = recipe(path, member)
        return kazoo_locks[key]

    def elect(req):
        coord.watch_elected_as_leader(ident(req, 'group'), lambda event: elected.append(event.group_id))
        coord.run_watchers()
        return [g.decode() if isinstance(g, bytes) else g for g in elected]

    ops = {
        'create_group': lambda r: coord.create_group(ident(r, 'group')).get(),
        'delete_group': lambda r: coord.delete_group(ident(r, 'group')).get(),
        'get_groups': lambda r: sorted(g.decode() if isinstance(g, bytes) else g for g in coord.get_groups().get()),
        'join_group': lambda r: coord.join_group(ident(r, 'group'), from_json(r.get('capabilities'))).get(),
        'join_group_create': lambda r: coord.join_group_create(ident(r, 'group'), from_json(r.get('capabilities'))),
        'leave_group': lambda r: coord.leave_group(ident(r, 'group')).get(),
        'get_members': lambda r: sorted(m.decode() if isinstance(m, bytes) else m for m in coord.get_members(ident(r, 'group')).get()),
        'get_member_capabilities': lambda r: to_json(coord.get_member_capabilities(ident(r, 'group'), ident(r, 'member')).get()),
        'update_capabilities': lambda r: coord.update_capabilities(ident(r, 'group'), from_json(r.get('capabilities'))).get(),
        'lock_acquire': lambda r: lock(r).acquire(blocking=r.get('blocking', False), **({'shared': True} if r.get('shared') else {})),
        'lock_release': lambda r: lock(r).release(),
        'lock_is_owner': lambda r: lock(r).is_still_owner(),
        'kazoo_lock_acquire': lambda r: kazoo_lock(r).acquire(blocking=r.get('blocking', False), timeout=r.get('timeout')),
        'kazoo_lock_release': lambda r: kazoo_lock(r).release(),
        'elect': elect,
        'run_watchers': lambda r: (coord.run_watchers(), [g.decode() if isinstance(g, bytes) else g for g in elected])[1],
        'get_leader': lambda r: (lambda v: v.decode() if isinstance(v, bytes) else v)(coord.get_leader(ident(r, 'group')).get()),
        'stand_down': lambda r: coord.stand_down_group_leader(ident(r, 'group')),
        'heartbeat': lambda r: coord.heartbeat(),
    }
    print(json.dumps({'ok': True, 'result': 'ready'}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req['op'] == 'stop':
            break
        try:
            result = ops[req['op']](req)
            print(json.dumps({'ok': True, 'result': to_json(result)}), flush=True)
        except Exception as e:  # report every failure to the test, which decides
            print(json.dumps({'ok': False, 'error': type(e).__name__, 'message': str(e)}), flush=True)
    coord.stop()


if __name__ == '__main__':
    main()

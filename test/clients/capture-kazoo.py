"""Drives kazoo through the recording proxy of capture-vectors.ts, one named step at a time.

Before each step it prints `STEP <name>` and waits for `ok` on stdin, so that every frame the
proxy records is labelled with the step that sent it. `ours` (argv[1]) is the proxy port;
`direct` (argv[2]) the real server, for a second client whose frames are not recorded.
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, NodeExistsError, NotEmptyError

proxy_port, direct_port, base = sys.argv[1], sys.argv[2], sys.argv[3]


def step(name):
    print('STEP ' + name, flush=True)
    assert sys.stdin.readline().strip() == 'ok'


other = KazooClient(hosts='127.0.0.1:' + direct_port, timeout=10)
other.start()
other.delete(base, recursive=True) if other.exists(base) else None

zk = KazooClient(hosts='127.0.0.1:' + proxy_port, timeout=4.0)
step('connect')
zk.start()
step('auth')
zk.add_auth('digest', 'user:secret')
step('ping')
time.sleep(3.5)
step('create')
zk.create(base, b'data')
step('createEphemeral')
zk.create(base + '/eph', b'e', ephemeral=True)
step('createSequential')
zk.create(base + '/seq-', b's', sequence=True)
step('create2')
zk.create(base + '/c2', b'c2', include_data=True)
step('exists')
zk.exists(base)
step('existsNoNode')
zk.exists(base + '/missing')
step('getData')
zk.get(base)
step('setData')
zk.set(base, b'new', version=0)
step('getChildren')
zk.get_children(base)
step('getChildren2')
zk.get_children(base, include_data=True)
step('multi')
t = zk.transaction()
t.create(base + '/tx', b'tx')
t.check(base, 1)
t.set_data(base + '/tx', b'tx2', version=0)
t.delete(base + '/tx', version=1)
t.commit()
step('multiFailing')
t = zk.transaction()
t.create(base + '/tx2', b'tx')
t.create(base + '/eph', b'dup')
t.commit()
step('getDataNoNode')
try:
    zk.get(base + '/missing')
except NoNodeError:
    pass
step('createNodeExists')
try:
    zk.create(base, b'again')
except NodeExistsError:
    pass
step('setDataBadVersion')
try:
    zk.set(base, b'x', version=42)
except BadVersionError:
    pass
step('deleteNotEmpty')
try:
    zk.delete(base)
except NotEmptyError:
    pass
step('delete')
zk.delete(base + '/c2', version=0)
fired = threading.Event()
step('getDataWatch')
zk.get(base, watch=lambda ev: fired.set())
step('notification')
other.set(base, b'changed')
assert fired.wait(5)
step('watchesToRestore')
zk.get(base, watch=lambda ev: None)
zk.exists(base + '/later', watch=lambda ev: None)
zk.get_children(base, watch=lambda ev: None)
connected = threading.Event()
zk.add_listener(lambda state: connected.set() if state == 'CONNECTED' else connected.clear())
step('drop')
deadline = time.time() + 10
while connected.is_set() and time.time() < deadline:
    time.sleep(0.02)
assert connected.wait(10)
zk.exists(base)
step('closeSession')
zk.stop()
zk.close()
other.delete(base, recursive=True)
other.stop()
other.close()
step('end')

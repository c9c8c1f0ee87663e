"""The console's page in headless Chromium (Debian's chromium and chromium-driver, through
Selenium; no browser download): it draws three live brokers, the controller and each partition's
leader; after a kill -9 of a leader's broker it marks that broker dead and moves the leadership,
live from the event stream, without a reload. Screenshots before and after go to the test's tmp
directory (CI keeps them as artifacts)."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from console_tools import ConsoleProcess, wait_for
from kafkalite.client import AdminClient, NewTopic

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("KAFKALITE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KAFKALITE_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1600,1000")
SESSION_TIMEOUT_S = 6          # the test brokers' zookeeper.session.timeout.ms

# what the page drew: brokers, the controller mark, and where each partition's leader chip is
PAGE_STATE = """
return {
  brokers: [...document.querySelectorAll('#brokers .broker')].map(b => ({
    id: Number(b.dataset.brokerId), alive: b.dataset.alive === 'true',
    controller: b.dataset.controller === 'true'})),
  controller: document.getElementById('controller').dataset.brokerId,
  leaders: [...document.querySelectorAll('#brokers .replica[data-role="leader"]')].map(r => ({
    topic: r.dataset.topic, partition: Number(r.dataset.partition),
    broker: Number(r.dataset.broker)})),
  timeline: [...document.querySelectorAll('#timeline li')].map(li => li.textContent),
  marker: window.__notReloaded === true,
};
"""


@pytest.fixture
def browser(tmp_path):
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]' "
                                     "(scripts/setup.sh does)")
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        pytest.skip(f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver "
                    f"(scripts/setup.sh does)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_page_draws_the_cluster_and_follows_a_failover(kafkalite_cluster_factory, zk_connect,
                                                       tmp_path, browser):
    cluster = kafkalite_cluster_factory(3)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=3)])
    console = ConsoleProcess(zk_connect, str(tmp_path / "console.log"))
    try:
        browser.get(console.url + "/")
        leaders = {p: cluster.wait_for_leader("orders", p) for p in range(3)}

        def drawn():
            page = browser.execute_script(PAGE_STATE)
            controller = cluster.controller_id()
            drawn_leaders = {x["partition"]: x["broker"] for x in page["leaders"]
                             if x["topic"] == "orders"}
            ok = (sorted((b["id"], b["alive"]) for b in page["brokers"])
                  == [(1, True), (2, True), (3, True)]
                  and page["controller"] == str(controller)
                  and [b["id"] for b in page["brokers"] if b["controller"]] == [controller]
                  and drawn_leaders == leaders)
            return page if ok else None
        wait_for(drawn, 30, f"three live brokers, controller {cluster.controller_id()} and "
                            f"leaders {leaders} on the page")
        browser.save_screenshot(str(tmp_path / "console-before-failover.png"))

        browser.execute_script("window.__notReloaded = true;")
        victim = leaders[0]
        killed_at = time.monotonic()
        cluster.kill(victim)

        def failover_drawn():
            page = browser.execute_script(PAGE_STATE)
            alive = {b["id"]: b["alive"] for b in page["brokers"]}
            moved = {x["partition"]: x["broker"] for x in page["leaders"]
                     if x["topic"] == "orders"}
            ok = (alive.get(victim) is False and len(moved) == 3
                  and victim not in moved.values()
                  and any(f"broker {victim} died; partition orders-0 elected leader "
                          f"{moved[0]} from ISR" in line for line in page["timeline"]))
            return page if ok else None
        # the event: the page draws the death the console read from /brokers/ids and the
        # controller's new leader; a deadline against a hang (the print says how long it took)
        page = wait_for(failover_drawn, 120,
                        f"broker {victim} drawn dead and orders-0 led elsewhere, live")
        took = time.monotonic() - killed_at
        browser.save_screenshot(str(tmp_path / "console-after-failover.png"))
        print(f"the page showed the failover {took:.1f} s after the kill -9 "
              f"(session timeout {SESSION_TIMEOUT_S} s); screenshots in {tmp_path}")
        assert page["marker"], "the page was reloaded: it must follow the event stream"
        new_leader = {x["partition"]: x["broker"] for x in page["leaders"]}[0]
        assert new_leader == cluster.wait_for_leader("orders", 0)
        assert os.path.getsize(tmp_path / "console-after-failover.png") > 0
    finally:
        console.stop()


TXN_STATE = """
return {
  spans: [...document.querySelectorAll('#brokers .replica[data-role="leader"] .txn-span')].map(
    s => ({partition: Number(s.closest('.replica').dataset.partition),
           from: Number(s.dataset.from), to: Number(s.dataset.to)})),
  txns: [...document.querySelectorAll('#txn-list .txn')].map(t => ({
    id: t.dataset.transactionalId, state: t.dataset.state, open: t.dataset.open === 'true',
    text: t.textContent})),
  committed: [...document.querySelectorAll('#timeline li[data-kind="txn_committed"]')].map(
    li => li.textContent),
  marker: window.__notReloaded === true,
};
"""


def test_page_draws_an_open_transaction_and_its_commit(kafkalite_cluster_factory, zk_connect,
                                                       tmp_path, browser):
    """A confluent-kafka transaction left open is drawn live on its leaders (the hatched span
    from the LSO to the HW) and in the transactions band (◐ OPEN); its commit turns the id
    COMMITTED, clears the spans and adds its sentence to the timeline, without a reload."""
    from confluent_kafka import Producer as ConfluentProducer

    cluster = kafkalite_cluster_factory(3, transaction_state_log_num_partitions=5)
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("orders", num_partitions=2, replication_factor=3)])
    console = ConsoleProcess(zk_connect, str(tmp_path / "console.log"))
    try:
        browser.get(console.url + "/")
        browser.execute_script("window.__notReloaded = true;")
        txn = ConfluentProducer({"bootstrap.servers": cluster.bootstrap_servers,
                                 "transactional.id": "drawn", "transaction.timeout.ms": 120000})
        txn.init_transactions(60)
        txn.begin_transaction()
        for i in range(8):
            txn.produce("orders", b"v%d" % i, partition=i % 2)
        txn.flush(60)

        def open_drawn():
            page = browser.execute_script(TXN_STATE)
            ok = (sorted((s["partition"], s["from"], s["to"]) for s in page["spans"])
                  == [(0, 0, 4), (1, 0, 4)]
                  and [(t["id"], t["state"], t["open"]) for t in page["txns"]]
                  == [("drawn", "Ongoing", True)])
            return page if ok else None
        page = wait_for(open_drawn, 60, "the open transaction drawn on orders-0 and orders-1")
        text = page["txns"][0]["text"]
        assert "◐ OPEN" in text and "orders-0, orders-1" in text
        browser.save_screenshot(str(tmp_path / "console-open-transaction.png"))

        txn.commit_transaction(60)

        def commit_drawn():
            page = browser.execute_script(TXN_STATE)
            ok = (not page["spans"] and page["committed"]
                  and [(t["id"], t["state"]) for t in page["txns"]]
                  == [("drawn", "CompleteCommit")])
            return page if ok else None
        page = wait_for(commit_drawn, 60, "the commit drawn and said")
        browser.save_screenshot(str(tmp_path / "console-committed.png"))
        assert "✔ COMMITTED" in page["txns"][0]["text"]
        assert len(page["committed"]) == 1
        assert "(transactional id drawn, epoch 0) committed a transaction on orders-0..1" in \
            page["committed"][0]
        assert page["marker"], "the page was reloaded: it must follow the event stream"
    finally:
        console.stop()

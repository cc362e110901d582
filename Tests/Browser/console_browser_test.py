#!/usr/bin/env python3
"""The operators' console in a real browser: Debian's Chromium, headless, through chromedriver and
Selenium, against a real `shopledger serve --console-port` (FaultTests.ConsoleBrowserTests starts it,
with its PostgreSQL, operators and a customer, and runs this script).

What it does, in order: signs in as an admin, finds the customer by a transaction id, grants an item
and revokes it (each through its confirmation page), sees both in the timeline and in the shop's
`myinfo`, posts a form without its CSRF token (refused, nothing done), switches the language, opens
the month report of the purchases (/money) and the shop's pages, replays a webhook event (/shop),
signs out; then signs in as a support operator, who is refused on the admin pages (and refused when
posting an admin form); then makes that session 31 minutes idle in the database and is sent to sign in.

axe-core (from axe-selenium-python) checks every page it visits: any violation of impact serious or
critical fails the run. Screenshots of the main pages in Korean and English go to --screenshots.

Prints one JSON object on standard output: {"passed", "steps": [{name, passed, detail}], "axe": [{page,
url, violations: [{id, impact, nodes}]}], "screenshots": [file names]}. Exit status 0 when every step
and every page passed, 1 otherwise, 2 when the browser could not be started.
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import traceback
import urllib.parse
import urllib.request

from axe_selenium_python import Axe
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

BLOCKING_IMPACTS = {"serious", "critical"}


class Run:
    def __init__(self, args):
        self.args = args
        self.console = args.console.rstrip("/")
        self.steps = []
        self.axe = []
        self.screenshots = []
        self.driver = None

    # -- the browser ---------------------------------------------------------------------------------

    def start_browser(self):
        options = webdriver.ChromeOptions()
        options.binary_location = self.args.chromium
        for argument in [
            "--headless=new",
            "--no-sandbox",  # the tests may run as root, where Chromium's sandbox refuses to start
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1280,900",
            "--force-device-scale-factor=1",
        ]:
            options.add_argument(argument)
        # Korean first, as the shop's operators' browsers: the console follows Accept-Language.
        options.add_experimental_option("prefs", {"intl.accept_languages": "ko-KR,ko,en"})
        # Debian's chromedriver, named: Selenium must not fetch a driver of its own.
        self.driver = webdriver.Chrome(service=Service(executable_path=self.args.chromedriver), options=options)
        self.driver.set_page_load_timeout(30)

    def get(self, path):
        self.driver.get(self.console + path)

    def path(self):
        """The page's path and query, percent-decoded (the console encodes a uid's '-' as %2D)."""
        parsed = urllib.parse.urlparse(self.driver.current_url)
        return urllib.parse.unquote(parsed.path) + ("?" + parsed.query if parsed.query else "")

    def heading(self):
        try:
            return self.driver.find_element(By.TAG_NAME, "h1").text.strip()
        except NoSuchElementException:
            return ""

    def navigate(self, action):
        """Does `action` (a click that submits or follows a link) and waits for the next page to load:
        the URL of a POST's 303 changes before its page is there."""
        old = self.driver.find_element(By.TAG_NAME, "html")
        action()

        def replaced(_driver):
            # Selenium's staleness_of expects StaleElementReferenceException; while the old document is
            # being torn down Chromium may instead answer "Node with given id does not belong to the
            # document" (seen once in a clean clone's run): the old page is gone either way.
            try:
                old.is_enabled()
                return False
            except StaleElementReferenceException:
                return True
            except WebDriverException as error:
                if "does not belong to the document" in str(error):
                    return True
                raise

        WebDriverWait(self.driver, 20).until(replaced)
        WebDriverWait(self.driver, 20).until(
            lambda driver: driver.execute_script("return document.readyState") == "complete"
        )

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    # -- recording -----------------------------------------------------------------------------------

    def step(self, name, passed, detail=""):
        self.steps.append({"name": name, "passed": bool(passed), "detail": str(detail)})
        return bool(passed)

    def check_page(self, page):
        """axe-core on the page the browser shows now."""
        axe = Axe(self.driver)
        axe.inject()
        results = axe.run()
        violations = [
            {
                "id": v["id"],
                "impact": v.get("impact"),
                "help": v.get("help"),
                "nodes": [n.get("target") for n in v.get("nodes", [])][:5],
            }
            for v in results.get("violations", [])
        ]
        self.axe.append({"page": page, "url": self.path(), "violations": violations})

    def screenshot(self, name):
        if not self.args.screenshots:
            return
        os.makedirs(self.args.screenshots, exist_ok=True)
        # The whole page, not only the window: Chromium's own capture beyond the viewport (DevTools).
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 3000), "scale": 1},
            },
        )
        file = name + ".png"
        with open(os.path.join(self.args.screenshots, file), "wb") as out:
            out.write(base64.b64decode(shot["data"]))
        self.screenshots.append(file)

    # -- the shop's own API --------------------------------------------------------------------------

    def myinfo(self):
        request = urllib.request.Request(
            self.args.shop.rstrip("/") + "/v1/user/shop/myinfo", headers={"idtoken": "dev:" + self.args.uid}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read().decode("utf-8"))

    def owns_in_myinfo(self, item):
        kind, index = item.split(":")
        document = self.myinfo()
        collection = document["sesacCollection"] if kind == "face" else document["backgroundCollection"]
        return int(index) in collection, collection

    # -- the scenario --------------------------------------------------------------------------------

    def sign_in(self, name, password, language_page):
        self.get("/customers")
        at_login = self.path().startswith("/login")
        self.step(f"{name}: a browser without a session is sent to sign in", at_login, self.path())
        if language_page:
            self.check_page(f"login ({language_page})")
            self.screenshot(f"login-{language_page}")
        self.find("#name").send_keys(name)
        self.find("#password").send_keys(password)
        self.navigate(self.find("form[action='/login'] button[type=submit]").click)
        signed_in = self.path().startswith("/customers") and bool(self.finds("form[action='/logout']"))
        cookies = {c["name"]: c for c in self.driver.get_cookies()}
        session = cookies.get("shopledger_console")
        return self.step(
            f"{name}: signs in and is back at /customers, with a Secure HttpOnly session cookie",
            signed_in and session is not None and session.get("secure") and session.get("httpOnly"),
            f"{self.path()} cookie={session}",
        )

    def wrong_password(self):
        self.get("/login")
        self.find("#name").send_keys(self.args.admin)
        self.find("#password").send_keys("not-the-password-at-all")
        self.navigate(self.find("form[action='/login'] button[type=submit]").click)
        refused = self.path().startswith("/login") and bool(self.finds("p.error[role=alert]"))
        self.step("a wrong password is refused with a message", refused, self.path())
        self.check_page("login, wrong password (ko)")

    def customers_flow(self):
        args = self.args
        self.check_page("customers search (ko)")
        self.screenshot("customers-search-ko")
        # Nobody matches: the search page says so.
        self.get("/customers?q=" + urllib.parse.quote("no-such-transaction-000"))
        self.step(
            "a search that matches nobody says so", bool(self.finds("p[role=status]")), self.path()
        )
        self.check_page("customers search, no match (ko)")
        # By transaction id: the one match is opened.
        self.get("/customers")
        box = self.find("#q")
        box.send_keys(args.transaction_id)
        self.navigate(self.find("form[role=search] button[type=submit]").click)
        expected = "/customers/" + args.uid
        self.step("finding a customer by transaction id opens their page", self.path() == expected, self.path())
        timeline = self.find("table#timeline").get_attribute("textContent")
        self.step(
            "the timeline shows the customer's purchases",
            all(t in timeline for t in args.purchases),
            timeline[:400],
        )
        self.check_page("customer (ko)")
        self.screenshot("customer-ko")

        # Grant: the form, then its confirmation page, then the customer again.
        select = Select(self.find("select[name=item]"))
        item = select.options[0].get_attribute("value")
        select.select_by_value(item)
        self.find("form[action$='/grants'] input[name=reason]").send_keys("browser test: lost sprout")
        self.navigate(self.find("form[action$='/grants'] button[type=submit]").click)
        confirming = bool(self.finds("input[name=confirmed][value=yes]")) and self.path() == expected + "/grants"
        self.step(f"granting {item} asks for confirmation first", confirming, self.path())
        self.check_page("grant confirmation (ko)")
        self.screenshot("confirm-grant-ko")
        owned_before, _ = self.owns_in_myinfo(item)
        self.step("nothing is granted before the confirmation", not owned_before, item)
        self.navigate(self.find("form.stack button[type=submit]").click)
        granted_page = self.path() == expected + "?done=grant"
        owned = self.find("ul#owned").get_attribute("textContent")
        shown = item.replace(":", " ") + " ·"  # face:2 is listed as "face 2 · 민트 새싹"
        self.step(
            f"after confirming, {item} is owned on the customer page",
            granted_page and shown in owned,
            f"{self.path()} owned={owned!r}",
        )
        revoke_forms = self.finds("table#timeline form[action*='/revoke']")
        self.step("the grant is in the timeline, with a revoke form", len(revoke_forms) == 1, len(revoke_forms))
        in_myinfo, collection = self.owns_in_myinfo(item)
        self.step(f"myinfo (the shop's SeSAC API) lists {item} after the grant", in_myinfo, collection)
        self.check_page("customer after a grant (ko)")
        self.screenshot("customer-granted-ko")

        # A form posted without its CSRF token: refused, nothing done.
        form = self.find("form[action$='/grants']")
        select = Select(self.find("select[name=item]"))
        other = select.options[-1].get_attribute("value")
        select.select_by_value(other)
        self.find("form[action$='/grants'] input[name=reason]").send_keys("forged")
        self.navigate(
            lambda: self.driver.execute_script(
                "arguments[0].querySelector('input[name=csrf]').remove();"
                "const c = document.createElement('input'); c.type = 'hidden'; c.name = 'confirmed';"
                "c.value = 'yes'; arguments[0].appendChild(c); arguments[0].submit();",
                form,
            )
        )
        refused = self.heading().startswith("403")
        other_owned, _ = self.owns_in_myinfo(other)
        self.step(
            "a grant posted without its CSRF token is refused (403) and grants nothing",
            refused and not other_owned,
            f"{self.heading()!r} {other} owned={other_owned}",
        )
        self.check_page("403, form without its CSRF token (ko)")
        self.screenshot("csrf-refused-ko")

        # Revoke: the timeline's form, its confirmation, then the customer again.
        self.get("/customers/" + urllib.parse.quote(args.uid, safe=""))
        self.find("table#timeline form[action*='/revoke'] input[name=reason]").send_keys("browser test: undo")
        self.navigate(self.find("table#timeline form[action*='/revoke'] button[type=submit]").click)
        confirming = bool(self.finds("input[name=confirmed][value=yes]")) and self.path().endswith("/revoke")
        self.step("revoking asks for confirmation first", confirming, self.path())
        self.check_page("revoke confirmation (ko)")
        self.navigate(self.find("form.stack button[type=submit]").click)
        revoked_page = self.path() == expected + "?done=revoke"
        owned = self.find("ul#owned").get_attribute("textContent")
        # textContent, not the rendered text: a narrow column wraps "회수됨" over two lines.
        timeline = self.find("table#timeline").get_attribute("textContent")
        self.step(
            f"after confirming, {item} is no longer owned and the timeline shows the grant revoked",
            revoked_page
            and shown not in owned
            and not self.finds("table#timeline form[action*='/revoke']")
            and "회수됨" in timeline,
            f"{self.path()} owned={owned!r}",
        )
        tags = [tag.get_attribute("textContent") for tag in self.finds("table#timeline span.tag")]
        self.step(
            "the timeline shows the grant and its revocation",
            tags.count("지원 지급") == tags.count("지원 회수") >= 1,
            tags,
        )
        in_myinfo, collection = self.owns_in_myinfo(item)
        self.step(f"myinfo no longer lists {item} after the revoke", not in_myinfo, collection)
        self.check_page("customer after a revoke (ko)")

        # An unknown customer and an unknown page: error pages.
        self.get("/customers/nobody-at-all")
        self.step("an unknown uid answers 404", self.heading().startswith("404"), self.heading())
        self.check_page("404, unknown customer (ko)")

        # English: the language switch (it returns to the page's section), then the same pages.
        self.get("/customers/" + urllib.parse.quote(args.uid, safe=""))
        self.navigate(self.find("header .account a[hreflang=en]").click)
        english = self.driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
        self.step(
            "the language switch turns the console English", english and self.path().startswith("/customers"),
            self.path(),
        )
        self.get("/customers/" + urllib.parse.quote(args.uid, safe=""))
        self.check_page("customer (en)")
        self.screenshot("customer-en")
        self.get("/customers")
        self.check_page("customers search (en)")
        self.screenshot("customers-search-en")
        self.get("/customers/" + urllib.parse.quote(args.uid, safe=""))
        select = Select(self.find("select[name=item]"))
        select.select_by_index(0)
        self.find("form[action$='/grants'] input[name=reason]").send_keys("screenshot only")
        self.navigate(self.find("form[action$='/grants'] button[type=submit]").click)
        self.check_page("grant confirmation (en)")
        self.screenshot("confirm-grant-en")
        self.get("/customers/nobody-at-all")
        self.check_page("404, unknown customer (en)")

    def opens(self, path, page, shot=None):
        """An admin's page: it opens (no error heading), and axe-core checks it."""
        self.get(path)
        heading = self.heading()
        self.step(f"{path} opens for an admin", heading and not heading[:3].isdigit(), heading)
        self.check_page(page)
        if shot:
            self.screenshot(shot)

    def money(self):
        args = self.args
        self.opens("/money", "money (en)", "money-en")
        # The month report of the purchases' month, through its form.
        form = self.find("form[action='/money/report']:has(input[name=kind][value=month])")
        month = form.find_element(By.NAME, "month")
        self.driver.execute_script("arguments[0].value = arguments[1]", month, args.report_month)
        self.navigate(form.find_element(By.CSS_SELECTOR, "button[type=submit]").click)
        heading = self.heading()
        text = self.find("body").get_attribute("textContent")
        self.step(
            f"the month report of {args.report_month} opens and counts the purchases ({args.report_total})",
            self.path().startswith("/money/report?") and not heading[:3].isdigit() and args.report_total in text,
            f"{self.path()} {heading!r}",
        )
        self.check_page("month report (en)")
        self.screenshot("report-month-en")
        csv = self.finds("a[href^='/money/report.csv']")
        self.step("the report links its CSV", len(csv) >= 1, len(csv))
        self.opens("/money/apple?date=" + args.report_month + "-13", "Apple sales against the ledger (en)")

    def shop(self):
        for path, page in [
            ("/shop", "shop (en)"),
            ("/shop/catalog", "catalog (en)"),
            ("/shop/apple-sync", "Apple sync (en)"),
            ("/shop/ledger", "ledger (en)"),
        ]:
            self.opens(path, page)
        self.opens("/shop/webhooks", "webhooks (en)", "webhooks-en")
        # An event by its id, then its replay button.
        self.find("#event-id").send_keys(self.args.webhook_event)
        self.navigate(self.find("form[action='/shop/webhooks/events'] button[type=submit]").click)
        self.step(
            f"the webhook event {self.args.webhook_event} opens",
            self.heading().endswith(self.args.webhook_event),
            f"{self.path()} {self.heading()!r}",
        )
        self.check_page("webhook event (en)")
        self.navigate(self.find("main form[action='/shop/webhooks/replay'] button[type=submit]").click)
        notice = " ".join(e.get_attribute("textContent") for e in self.finds("main [role=status]"))
        self.step(
            "replaying the event queues one delivery again (one endpoint)",
            self.path() == "/shop/webhooks?done=replay&queued=1",
            f"{self.path()} {notice!r}",
        )
        self.check_page("webhooks after a replay (en)")

    def sign_out(self, name):
        self.get("/customers")
        self.navigate(self.find("form[action='/logout'] button[type=submit]").click)
        at_login = self.path().startswith("/login")
        self.get("/customers")
        still_out = self.path().startswith("/login")
        self.step(f"{name}: signing out ends the session", at_login and still_out, self.path())

    def support_refused(self):
        self.driver.delete_all_cookies()
        if not self.sign_in(self.args.support, self.args.support_password, None):
            return
        for path in ["/shop", "/shop/webhooks", "/money"]:
            self.get(path)
            heading = self.heading()
            self.step(f"support is refused on {path} (403)", heading.startswith("403"), heading)
        self.check_page("403, support on an admin page (ko)")
        self.screenshot("forbidden-ko")
        # A form of the admin pages posted by support: refused too, before anything is done.
        self.get("/customers")
        csrf = self.find("input[name=csrf]").get_attribute("value")
        self.driver.execute_script(
            "const f = document.createElement('form'); f.method = 'post'; f.action = '/shop/webhooks/replay';"
            "for (const [n, v] of [['csrf', arguments[0]], ['event', arguments[1]], ['endpoint', 'all']]) {"
            "const i = document.createElement('input'); i.type = 'hidden'; i.name = n; i.value = v; f.appendChild(i); }"
            "document.body.appendChild(f); f.submit();",
            csrf,
            self.args.webhook_event,
        )
        WebDriverWait(self.driver, 20).until(lambda driver: driver.current_url.endswith("/shop/webhooks/replay"))
        self.step("support posting a replay is refused (403)", self.heading().startswith("403"), self.heading())

    def expired_session(self):
        """31 idle minutes, as the database sees them: the next page sends the browser to sign in."""
        sql = (
            "UPDATE console_sessions SET last_seen_at = last_seen_at - interval '31 minutes' "
            "WHERE ended_at IS NULL AND operator_id = "
            "(SELECT operator_id FROM console_operators WHERE name = '%s')" % self.args.support
        )
        done = subprocess.run(
            [self.args.psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.args.database_url, "-c", sql],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if not self.step("the support session is made 31 minutes idle in the database", done.returncode == 0,
                         done.stderr.strip()):
            return
        self.get("/customers/" + urllib.parse.quote(self.args.uid, safe=""))
        self.step(
            "an expired session is sent to sign in, to come back to the page it asked for",
            self.path().startswith("/login?next="),
            self.path(),
        )

    def axe_sees(self):
        """axe-core finds what it should on a page made to fail it: a check that cannot pass by accident."""
        self.driver.get(
            "data:text/html,<html><body><p style='color:%23ccc'>faint</p><img src=x><input></body></html>"
        )
        axe = Axe(self.driver)
        axe.inject()
        found = {v["id"] for v in axe.run().get("violations", [])}
        self.step(
            "axe-core finds the violations of a page made to fail it",
            {"image-alt", "label", "html-has-lang"} <= found,
            sorted(found),
        )

    def run(self):
        self.axe_sees()
        self.driver.delete_all_cookies()
        if self.sign_in(self.args.admin, self.args.admin_password, "ko"):
            self.customers_flow()
            self.money()
            self.shop()
            self.sign_out(self.args.admin)
        self.wrong_password()
        self.support_refused()
        self.expired_session()
        self.get("/language?to=en&next=%2Flogin")
        self.step("the language switch works before signing in", self.path() == "/login", self.path())
        self.check_page("login (en)")
        self.screenshot("login-en")
        self.step("the scenario ran to its end", True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--console", required=True, help="the console's base URL")
    parser.add_argument("--shop", required=True, help="the shop's base URL (myinfo)")
    parser.add_argument("--uid", required=True)
    parser.add_argument("--transaction-id", required=True)
    parser.add_argument("--purchases", nargs="+", default=[], help="transaction ids the timeline must show")
    parser.add_argument("--admin", required=True)
    parser.add_argument("--support", required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--report-month", required=True, help="YYYY-MM of the purchases")
    parser.add_argument("--report-total", required=True, help="text the month report must show (its total)")
    parser.add_argument("--webhook-event", required=True, help="evt_N: an event to replay")
    parser.add_argument("--psql", default="psql")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--screenshots", default="")
    parser.add_argument("--summary", default="", help="also write the JSON summary to this file")
    args = parser.parse_args()
    # Passwords come in the environment, not on a command line others can read.
    args.admin_password = os.environ["CONSOLE_ADMIN_PASSWORD"]
    args.support_password = os.environ["CONSOLE_SUPPORT_PASSWORD"]

    run = Run(args)
    try:
        run.start_browser()
    except WebDriverException as error:
        summary = json.dumps({"passed": False, "error": "the browser did not start: " + str(error)})
        print(summary)
        if args.summary:
            with open(args.summary, "w", encoding="utf-8") as file:
                file.write(summary)
        return 2
    try:
        run.run()
    except Exception:  # a missing element or a browser error: the step that was running failed
        trace = traceback.format_exc(limit=4).split("Stacktrace:")[0]  # not chromedriver's own addresses
        run.step("the scenario ran to its end", False, trace + "\nat " + run.path())
    finally:
        run.driver.quit()
    blocking = [
        (page["page"], v["id"], v["impact"])
        for page in run.axe
        for v in page["violations"]
        if v["impact"] in BLOCKING_IMPACTS
    ]
    run.step(
        f"axe-core: no serious or critical violation on {len(run.axe)} pages", not blocking and run.axe, blocking
    )
    passed = all(s["passed"] for s in run.steps)
    summary = json.dumps(
        {"passed": passed, "steps": run.steps, "axe": run.axe, "screenshots": run.screenshots},
        ensure_ascii=False,
        indent=1,
    )
    print(summary)
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as file:
            file.write(summary)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

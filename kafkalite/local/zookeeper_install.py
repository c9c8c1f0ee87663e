"""Where the local ZooKeeper is and how to run it: Java plus a classpath (or zkServer.sh).

The local install is found in this order: ``$ZOOKEEPER_HOME`` (``lib/*.jar``), Debian/Ubuntu's
``zookeeper`` package (``/usr/share/java/zookeeper.jar``), a few usual directories, ``zkServer.sh``
on PATH. Java comes from ``$JAVA_HOME`` or PATH.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import zipfile
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

ENV_EXTERNAL = "KAFKALITE_ZOOKEEPER"          # host:port[,host:port] of a server to use as is

STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
DEBIAN_SLF4J_BINDING = "/usr/share/java/slf4j-simple.jar"
KNOWN_HOMES = (
    "/opt/zookeeper", "/usr/local/zookeeper", "/usr/share/zookeeper", "/usr/lib/zookeeper",
    "/opt/homebrew/opt/zookeeper/libexec", "/usr/local/opt/zookeeper/libexec",
)

INSTALL_HINT = (
    "Install ZooKeeper: `sudo apt-get install zookeeper` (Debian/Ubuntu: provides "
    "/usr/share/java/zookeeper.jar), or unpack an Apache ZooKeeper release and set "
    "ZOOKEEPER_HOME=/path/to/apache-zookeeper-x.y.z-bin, or put zkServer.sh on PATH. "
    f"Or point {ENV_EXTERNAL}=host:port at a ZooKeeper that is already running."
)


class ZooKeeperNotFoundError(RuntimeError):
    """No local ZooKeeper (or no Java) to start."""


@dataclass(frozen=True)
class ZooKeeperInstall:
    """How to run ZooKeeper here: java + a classpath, or (last resort) a zkServer.sh script."""

    java: str | None
    classpath: tuple[str, ...] = ()
    script: str | None = None
    location: str = ""
    missing_jars: tuple[str, ...] = field(default=(), compare=False)

    def command(self, main_class: str, config_path: str, workdir: str) -> list[str]:
        if self.script is not None:
            return [self.script, "start-foreground", config_path]
        assert self.java is not None
        return [self.java, *_jvm_options(workdir), "-cp", os.pathsep.join(self.classpath),
                main_class, config_path]

    def environment(self, workdir: str) -> dict[str, str]:
        env = dict(os.environ)
        if self.script is not None:
            env.setdefault("ZOO_LOG_DIR", workdir)
            env["ZOO_LOG4J_PROP"] = "INFO,CONSOLE"
            env["SERVER_JVMFLAGS"] = " ".join(_jvm_options(workdir))
        return env


def _jvm_options(workdir: str) -> list[str]:
    return [
        "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Djava.net.preferIPv4Stack=true",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.jmx.log4j.disable=true",
        f"-Dzookeeper.log.dir={workdir}",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
    ]


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def _manifest_class_path(jar: str) -> list[str]:
    """Jars a jar's manifest pulls in (Debian's zookeeper.jar lists its dependencies there)."""
    try:
        with zipfile.ZipFile(jar) as zf:
            text = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return []
    text = text.replace("\r\n", "\n").replace("\n ", "")  # unfold continuation lines
    for line in text.split("\n"):
        if line.startswith("Class-Path:"):
            return line.split(":", 1)[1].split()
    return []


def _install_from_home(home: str, java: str | None) -> ZooKeeperInstall | None:
    """An Apache-style layout: <home>/lib/*.jar (+ <home>/*.jar, <home>/conf for logging)."""
    jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar"))) + sorted(
        glob.glob(os.path.join(home, "*.jar")))
    if not any(re.match(r"zookeeper-\d.*\.jar$|zookeeper\.jar$", os.path.basename(j))
               for j in jars):
        return None
    conf = os.path.join(home, "conf")
    classpath = ([conf] if os.path.isdir(conf) else []) + jars
    return ZooKeeperInstall(java=java, classpath=tuple(classpath), location=home)


def _install_debian(java: str | None) -> ZooKeeperInstall | None:
    if not os.path.exists(DEBIAN_JAR):
        return None
    classpath = [DEBIAN_JAR]
    if os.path.exists(DEBIAN_SLF4J_BINDING):
        classpath.append(DEBIAN_SLF4J_BINDING)  # without a binding slf4j logs nothing at all
    missing = tuple(j for j in _manifest_class_path(DEBIAN_JAR) if not os.path.exists(j))
    return ZooKeeperInstall(java=java, classpath=tuple(classpath), location=DEBIAN_JAR,
                            missing_jars=missing)


def find_zookeeper_install() -> ZooKeeperInstall:
    """The local ZooKeeper to launch, or ZooKeeperNotFoundError saying how to get one."""
    java = find_java()
    looked: list[str] = []
    candidates = []
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        looked.append(f"ZOOKEEPER_HOME={home} (lib/*.jar)")
        found = _install_from_home(home, java)
        if found is None:
            raise ZooKeeperNotFoundError(
                f"ZOOKEEPER_HOME={home} has no zookeeper jar in lib/. {INSTALL_HINT}")
        candidates.append(found)
    looked.append(DEBIAN_JAR)
    candidates.append(_install_debian(java))
    for known in KNOWN_HOMES:
        looked.append(f"{known}/lib")
        candidates.append(_install_from_home(known, java))
    script = shutil.which("zkServer.sh")
    looked.append("zkServer.sh on PATH")
    if script:
        real = os.path.realpath(script)
        candidates.append(_install_from_home(os.path.dirname(os.path.dirname(real)), java))
        candidates.append(ZooKeeperInstall(java=java, script=real, location=real))
    for install in candidates:
        if install is None:
            continue
        if install.script is None and install.java is None:
            raise ZooKeeperNotFoundError(
                f"found ZooKeeper at {install.location} but no Java to run it: install one "
                "(`sudo apt-get install default-jre-headless`) or set JAVA_HOME.")
        if [j for j in install.missing_jars if "jline" not in j]:  # jline: only zkCli needs it
            log.warning("ZooKeeper at %s lists jars that are missing: %s", install.location,
                        ", ".join(install.missing_jars))
        return install
    raise ZooKeeperNotFoundError(
        f"no ZooKeeper installation found (looked at: {'; '.join(looked)}). {INSTALL_HINT}")



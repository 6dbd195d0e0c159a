#!/usr/bin/env node
// Starts @vercel/cosmosdb-server (an in-memory Cosmos DB for NoSQL stand-in)
// over HTTPS for memory-core's tests.
//
// The certificate bundled with the package expired in 2021, so the caller
// passes its own certificate and key (tests/support/cosmos_server.py makes a
// fresh self-signed one for localhost/127.0.0.1).
//
// Usage:
//   node start.js --cert CERT.pem --key KEY.pem [--port 0] [--host 127.0.0.1]
// or the environment variables COSMOS_SERVER_CERT, COSMOS_SERVER_KEY,
// COSMOS_SERVER_PORT, COSMOS_SERVER_HOST (arguments win).
//
// Once listening it prints exactly one JSON line on stdout, e.g.
//   {"port": 12345, "host": "127.0.0.1", "pid": 4242}
// and nothing else on stdout afterwards (the server logs errors on stderr).
// It exits on SIGTERM/SIGINT, or when its stdin closes if --exit-on-stdin-close
// is given (so the server dies with a parent that was killed abruptly).
//
// Compatibility fixes (on by default; --no-compat or COSMOS_SERVER_COMPAT=0
// turns them off to get the package's raw behaviour):
//  * A point read (GET .../docs/{id}) of an item that does not exist in a
//    partitioned container crashes the package's handler with a TypeError and
//    answers 500; real Cosmos DB answers 404 NotFound. The 500 is rewritten to
//    404 {"code":"NotFound"} so clients see what production sends.
//  * Transactional batch: the Python SDK sends the partition key only in the
//    request header, but the package reads it per operation, so every
//    operation other than "create" failed with 500. The header value is
//    copied into each operation that lacks one. (Batches are still NOT atomic:
//    operations before a failing one stay applied.)
//
// --log-requests (or COSMOS_SERVER_LOG_REQUESTS=1) logs one line per request
// ("METHOD URL -> STATUS") on stderr.

"use strict";

const fs = require("fs");
const { PassThrough } = require("stream");
const { createHttpsServer } = require("@vercel/cosmosdb-server");

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const next = () => {
      i += 1;
      if (i >= argv.length) fail(`missing value for ${arg}`);
      return argv[i];
    };
    switch (arg) {
      case "--cert":
        out.cert = next();
        break;
      case "--key":
        out.key = next();
        break;
      case "--port":
        out.port = next();
        break;
      case "--host":
        out.host = next();
        break;
      case "--exit-on-stdin-close":
        out.exitOnStdinClose = true;
        break;
      case "--no-compat":
        out.compat = false;
        break;
      case "--log-requests":
        out.logRequests = true;
        break;
      case "-h":
      case "--help":
        process.stdout.write(
          "usage: node start.js --cert CERT.pem --key KEY.pem [--port N] [--host H] [--exit-on-stdin-close]\n"
        );
        process.exit(0);
        break;
      default:
        fail(`unknown argument: ${arg}`);
    }
  }
  return out;
}

function fail(message) {
  process.stderr.write(`cosmos test server: ${message}\n`);
  process.exit(2);
}

const args = parseArgs(process.argv.slice(2));
const certPath = args.cert || process.env.COSMOS_SERVER_CERT;
const keyPath = args.key || process.env.COSMOS_SERVER_KEY;
const host = args.host || process.env.COSMOS_SERVER_HOST || "127.0.0.1";
const portText = args.port || process.env.COSMOS_SERVER_PORT || "0";
const port = Number.parseInt(portText, 10);
const compat =
  args.compat !== undefined ? args.compat : process.env.COSMOS_SERVER_COMPAT !== "0";
const logRequests =
  Boolean(args.logRequests) || process.env.COSMOS_SERVER_LOG_REQUESTS === "1";

if (!certPath || !keyPath) {
  fail("a certificate and key are required (--cert/--key or COSMOS_SERVER_CERT/COSMOS_SERVER_KEY)");
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  fail(`invalid port: ${portText}`);
}

let cert;
let key;
try {
  cert = fs.readFileSync(certPath);
  key = fs.readFileSync(keyPath);
} catch (err) {
  fail(`cannot read certificate/key: ${err.message}`);
}

// {cert, key} override the package's expired bundled pair; the other options
// it sets (minVersion TLSv1, no client certificates) are kept.
// keepAlive: the package answers "connection: close" by default, so every
// request paid a new TCP connection and TLS handshake, most of a request's
// time here; Cosmos DB keeps connections open, and so does this server now.
// Idle connections are never timed out (keepAliveTimeout 0): the SDK's pool
// never sends on a socket the server is closing at that moment.
const server = createHttpsServer({ cert, key, keepAlive: true });
server.keepAliveTimeout = 0;

const DOC_PATH = /^\/+dbs\/[^/]+\/colls\/[^/]+\/docs\/[^/]+\/?$/;

function isTrueHeader(req, name) {
  const value = req.headers[name];
  return typeof value === "string" && value.toLowerCase() === "true";
}

// Point read of a missing item: the package throws "Cannot read properties of
// undefined" in read-document.js and answers 500. Rewrite to a 404.
function fixMissingPointRead(req, res) {
  if (req.method !== "GET" || !DOC_PATH.test(req.url.split("?")[0])) return;
  const end = res.end.bind(res);
  res.end = (chunk, ...rest) => {
    if (
      res.statusCode === 500 &&
      !res.headersSent &&
      chunk &&
      String(chunk).includes("Cannot read properties of undefined")
    ) {
      res.statusCode = 404;
      return end(
        JSON.stringify({
          code: "NotFound",
          message: "Entity with the specified id does not exist in the system."
        }),
        ...rest
      );
    }
    return end(chunk, ...rest);
  };
}

// Transactional batch: copy the x-ms-documentdb-partitionkey header into
// each operation without a partitionKey. The body has to be read and
// rewritten, so the package gets a replacement request stream through
// callback. Returns true when it took the request over, false otherwise.
function fixBatchPartitionKeys(req, callback) {
  if (req.method !== "POST" || !isTrueHeader(req, "x-ms-cosmos-is-batch-request")) {
    return false;
  }
  const header = req.headers["x-ms-documentdb-partitionkey"];
  const chunks = [];
  req.on("data", chunk => chunks.push(chunk));
  req.on("end", () => {
    let body = Buffer.concat(chunks);
    try {
      const ops = JSON.parse(body.toString("utf8"));
      if (Array.isArray(ops) && header) {
        ops.forEach(op => {
          if (op && typeof op === "object" && op.partitionKey === undefined) {
            // eslint-disable-next-line no-param-reassign
            op.partitionKey = header;
          }
        });
        body = Buffer.from(JSON.stringify(ops), "utf8");
      }
    } catch (err) {
      // leave malformed bodies to the package's own error handling
    }
    const replacement = new PassThrough();
    replacement.headers = { ...req.headers, "content-length": String(body.length) };
    replacement.rawHeaders = req.rawHeaders;
    replacement.method = req.method;
    replacement.url = req.url;
    replacement.httpVersion = req.httpVersion;
    replacement.socket = req.socket;
    replacement.connection = req.socket;
    replacement.end(body);
    callback(replacement);
  });
  return true;
}

const packageListeners = server.listeners("request");
server.removeAllListeners("request");
server.on("request", (req, res) => {
  if (logRequests) {
    res.on("finish", () => {
      process.stderr.write(`${req.method} ${req.url} -> ${res.statusCode}\n`);
    });
  }
  const dispatch = request => {
    packageListeners.forEach(listener => listener.call(server, request, res));
  };
  if (compat) {
    fixMissingPointRead(req, res);
    if (fixBatchPartitionKeys(req, dispatch)) return;
  }
  dispatch(req);
});

server.on("error", err => {
  fail(`server error: ${err.message}`);
});

server.listen(port, host, () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ port: address.port, host, pid: process.pid })}\n`
  );
});

function shutdown() {
  server.close(() => process.exit(0));
  // close() ends idle kept-alive connections (Node 19 and later); do not hang
  // on one still busy.
  setTimeout(() => process.exit(0), 1000).unref();
}

process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);

if (args.exitOnStdinClose) {
  process.stdin.on("end", shutdown);
  process.stdin.on("error", shutdown);
  process.stdin.resume();
}

// A real OAuth 2 authorization server for the tests: oauth2-mock-server on 127.0.0.1, issuing
// signed JWTs from its token endpoint and publishing its keys and metadata, plus a few test-only
// controls. Started by tests/support/oauth.py; prints one JSON line ({"issuer", "jwks_uri", "kid"})
// when ready, and exits when its stdin closes (so it never outlives the tests) or on SIGTERM.
//
// Usage (in the folder where the package is installed): node mock_server.mjs [--alg RS256|ES256|...] [--discovery oidc|oauth]
//   --discovery  which metadata document it serves: OpenID Connect's
//                /.well-known/openid-configuration (default) or RFC 8414's
//                /.well-known/oauth-authorization-server
//
// Token requests (POST /token, grant_type=client_credentials) accept, besides the standard
// client_id, scope and resource (RFC 8707, which becomes "aud"), these test parameters, applied
// by the server before it signs: sub, scp (space-separated, becomes a list), expires_in (seconds
// from now, may be negative), not_before (seconds from now), iss, omit (claims to leave out,
// comma-separated).
//
// Authorization requests (GET /authorize, the code flow with PKCE and nonce) accept two test
// parameters, test_sub and test_scope: the access token the code is exchanged for has that sub and
// scope (and the "aud" of the token request's resource). Without them the code is for the login set
// by POST /_test/login?sub=...&scope=... (a browser cannot add parameters), or else "johndoe"
// with no scope. The ID token has the same sub, the client id as "aud", and the nonce.
//
// Test controls: POST /_test/rotate (a new signing key, published beside the old one; answers
// {"kid"}), GET /_test/stats ({"jwks": fetches of /jwks}), POST /_test/jwks-status?code=N (answer
// /jwks with HTTP N from now on; 200 restores it).
import http from "node:http";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

// NOTE: the package is installed in a cache folder, not beside this file, and ES modules resolve
// from the importing file: so it is found from the working folder (the fixture runs us there).
const installed = createRequire(`${process.cwd()}/`).resolve("oauth2-mock-server");
const { Events, OAuth2Issuer, OAuth2Service } = await import(pathToFileURL(installed).href);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
};
const alg = option("--alg", "RS256");
const discovery = option("--discovery", "oidc");
if (!["oidc", "oauth"].includes(discovery)) {
  console.error(`--discovery must be oidc or oauth, not ${discovery}`);
  process.exit(2);
}

const issuer = new OAuth2Issuer();
let signingKid = (await issuer.keys.generate(alg)).kid;
// NOTE: the library signs with its keys in turn; the tests need the newest key to sign, as an
// identity provider does after a rotation while it still publishes the old key.
const buildToken = issuer.buildToken.bind(issuer);
issuer.buildToken = (opts) => buildToken({ ...opts, kid: signingKid });

const wellKnown =
  discovery === "oauth" ? "/.well-known/oauth-authorization-server" : "/.well-known/openid-configuration";
const service = new OAuth2Service(issuer, { wellKnownDocument: wellKnown });

let nextLogin = { sub: "johndoe", scope: undefined };
const logins = new Map();

service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const code = redirect.url.searchParams.get("code");
  if (code === null) return;
  const query = req.query ?? {};
  logins.set(code, {
    sub: query.test_sub ?? nextLogin.sub,
    scope: query.test_scope ?? nextLogin.scope,
  });
});

service.on(Events.BeforeTokenSigning, (token, req) => {
  const body = req.body ?? {};
  const payload = token.payload;
  if (body.grant_type === "authorization_code") {
    const login = logins.get(body.code) ?? { sub: "johndoe", scope: undefined };
    payload.sub = login.sub;
    // NOTE: the access token has a scope claim (the library sets one), the ID token has none.
    if ("scope" in payload) {
      if (login.scope === undefined) delete payload.scope;
      else payload.scope = login.scope;
      if (body.resource !== undefined) payload.aud = body.resource;
    }
    return;
  }
  const now = Math.floor(Date.now() / 1000);
  let clientId = body.client_id;
  const basic = req.headers.authorization ?? "";
  if (basic.startsWith("Basic ")) {
    clientId = Buffer.from(basic.slice(6), "base64").toString().split(":")[0];
  }
  payload.sub = body.sub ?? clientId;
  if (body.client_id !== undefined) payload.client_id = clientId;
  if (body.resource !== undefined) payload.aud = body.resource;
  if (body.scp !== undefined) payload.scp = String(body.scp).split(" ").filter(Boolean);
  if (body.expires_in !== undefined) payload.exp = now + Number(body.expires_in);
  if (body.not_before !== undefined) payload.nbf = now + Number(body.not_before);
  if (body.iss !== undefined) payload.iss = body.iss;
  for (const claim of String(body.omit ?? "").split(",").filter(Boolean)) delete payload[claim];
});

let jwksFetches = 0;
let jwksStatus = 200;

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const reply = (code, body) => {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (url.pathname === "/jwks" && req.method === "GET") {
    jwksFetches += 1;
    if (jwksStatus !== 200) return reply(jwksStatus, { error: "unavailable" });
  } else if (url.pathname === "/_test/stats") {
    return reply(200, { jwks: jwksFetches });
  } else if (url.pathname === "/_test/login" && req.method === "POST") {
    nextLogin = { sub: url.searchParams.get("sub") ?? "johndoe", scope: url.searchParams.get("scope") ?? undefined };
    return reply(200, nextLogin);
  } else if (url.pathname === "/_test/rotate" && req.method === "POST") {
    issuer.keys.generate(alg).then((key) => {
      signingKid = key.kid;
      reply(200, { kid: key.kid });
    });
    return;
  } else if (url.pathname === "/_test/jwks-status" && req.method === "POST") {
    jwksStatus = Number(url.searchParams.get("code") ?? 200);
    return reply(200, { code: jwksStatus });
  }
  service.requestHandler(req, res);
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  issuer.url = `http://127.0.0.1:${port}`;
  console.log(JSON.stringify({ issuer: issuer.url, jwks_uri: `${issuer.url}/jwks`, kid: signingKid }));
});

const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();

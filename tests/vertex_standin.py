"""A stand-in for the Vertex AI API on 127.0.0.1 that records what gcloud sends it.

The real gcloud talks to it when CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM points
here (../shared/CLUSTERS.md): a test sees the exact request a submission makes, and
nothing reaches a real cloud. It answers a create as Vertex does, with the new job's
name and state PENDING, or with an error for display names it is told to refuse.
"""
import dataclasses
import http.server
import json
import os
import tempfile
import threading
from typing import Dict, List, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Request:
  method: str
  path: str                 # without the query string
  headers: Dict[str, str]   # names in lower case
  body: Optional[dict]

  @property
  def display_name(self) -> Optional[str]:
    return (self.body or {}).get('displayName')


class StandIn:
  """ThreadingHTTPServer on a free port; `requests()` is what it received so far."""

  def __init__(self):
    self._lock = threading.Lock()
    self._requests: List[Request] = []
    self._refusals: Dict[str, Tuple[int, str, str]] = {}
    self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), self._handler())
    self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
    self._thread.start()

  @property
  def url(self) -> str:
    return f'http://127.0.0.1:{self._server.server_address[1]}/'

  def refuse(self, display_name: str, code: int, status: str, message: str) -> None:
    """Answers a create of this display name with an error, as Vertex would."""
    with self._lock:
      self._refusals[display_name] = (code, status, message)

  def requests(self, display_name: Optional[str] = None) -> List[Request]:
    with self._lock:
      return [r for r in self._requests
              if display_name is None or r.display_name == display_name]

  def close(self) -> None:
    self._server.shutdown()
    self._server.server_close()
    self._thread.join()

  def _handler(self):
    standin = self

    class Handler(http.server.BaseHTTPRequestHandler):
      def _record(self) -> Request:
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        request = Request(self.command, self.path.split('?')[0],
                          {k.lower(): v for k, v in self.headers.items()},
                          json.loads(raw) if raw else None)
        with standin._lock:
          standin._requests.append(request)
        return request

      def _answer(self, code: int, document: dict) -> None:
        data = json.dumps(document).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def do_POST(self):
        request = self._record()
        with standin._lock:
          refusal = standin._refusals.get(request.display_name)
          number = len(standin._requests)
        if refusal:
          code, status, message = refusal
          self._answer(code, {'error': {'code': code, 'status': status, 'message': message}})
          return
        # POST /v1/projects/P/locations/R/customJobs -> that collection's job N.
        parent = request.path[len('/v1/'):]
        self._answer(200, {'name': f'{parent}/{number}', 'displayName': request.display_name,
                           'state': 'JOB_STATE_PENDING'})

      def do_GET(self):  # a submission never reads; record it and say so
        self._record()
        self._answer(404, {'error': {'code': 404, 'status': 'NOT_FOUND',
                                     'message': 'the stand-in only creates jobs'}})

      def log_message(self, *args):  # keep the test's output to what matters
        pass

    return Handler


def gcloud_environment(standin: StandIn, directory: str) -> Tuple[Dict[str, str], str]:
  """An environment for gcloud that reaches only `standin`, and a token file.

  gcloud's configuration lives in `directory` (never the user's ~/.config/gcloud),
  and no project or region comes from the calling environment.
  """
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(('CLOUDSDK_', 'GOOGLE_', 'GCLOUD_'))}
  config = tempfile.mkdtemp(prefix='gcloud-config-', dir=directory)
  env.update({'CLOUDSDK_CONFIG': config, 'CLOUDSDK_CORE_DISABLE_PROMPTS': '1',
              'CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM': standin.url,
              # No usage reports, no update checks: nothing leaves this machine.
              'CLOUDSDK_CORE_DISABLE_USAGE_REPORTING': '1',
              'CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK': '1'})
  token_file = os.path.join(directory, 'access-token')
  with open(token_file, 'w') as f:
    f.write('standin-token-4f2a\n')
  return env, token_file

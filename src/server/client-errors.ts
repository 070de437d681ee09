/** Answers the HTTP/1.1 fronts write themselves before closing a connection the request cannot be served on. */
export const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n';
export const REQUEST_TIMEOUT =
  'HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n';

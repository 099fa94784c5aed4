'use strict';
// Express's response pattern: methods assigned to an object, a package required under the
// name of one of them.
var send = require('send');
var res = Object.create(null);
module.exports = res;

res.send = function send(body) {
  this.end(body);
  return this;
};

res.json = function json(obj) {
  return this.send(JSON.stringify(obj));
};

res.jsonp = function jsonp(obj) {
  var body = JSON.stringify(obj);
  return this.send(body);
};

res.sendFile = function sendFile(path, options) {
  var file = send(this.req, path, options);
  sendfile(this, file, options);
};

function sendfile(res, file, options) {
  file.pipe(res);
}

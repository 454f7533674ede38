"""The web panel's ROS-free parts (and its page: index.html, app.js, style.css)."""

#!/bin/sh

set +e

FIRSTUSER=$(getent passwd 1000 | cut -d: -f1)
NEW_USER='ops'
if [ -f /usr/lib/userconf-pi/userconf ]; then
   /usr/lib/userconf-pi/userconf "$NEW_USER" '$y$j9T$abc$def'
else
   printf '%s:%s\n' "$FIRSTUSER" '$y$j9T$abc$def' | chpasswd -e
   if [ "$FIRSTUSER" != "$NEW_USER" ]; then
      usermod -l "$NEW_USER" "$FIRSTUSER"
      usermod -m -d "/home/$NEW_USER" "$NEW_USER"
      groupmod -n "$NEW_USER" "$FIRSTUSER"
      if grep -q "^autologin-user=" /etc/lightdm/lightdm.conf ; then
         sed /etc/lightdm/lightdm.conf -i -e "s/^autologin-user=.*/autologin-user=$NEW_USER/"
      fi
      if [ -f /etc/systemd/system/getty@tty1.service.d/autologin.conf ]; then
         sed /etc/systemd/system/getty@tty1.service.d/autologin.conf -i -e "s/$FIRSTUSER/$NEW_USER/"
      fi
      if [ -f /etc/sudoers.d/010_pi-nopasswd ]; then
         sed -i "s/^$FIRSTUSER /$NEW_USER /" /etc/sudoers.d/010_pi-nopasswd
      fi
   fi
fi
rfkill unblock wifi
for filename in /var/lib/systemd/rfkill/*:wlan ; do
  echo 0 > "$filename"
done
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then
   /usr/lib/raspberrypi-sys-mods/imager_custom set_timezone 'UTC'
else
   rm -f /etc/localtime
   echo 'UTC' >/etc/timezone
   dpkg-reconfigure -f noninteractive tzdata
fi
rm -f /boot/firstrun.sh
sed -i 's| systemd.run.*||g' /boot/cmdline.txt
exit 0
